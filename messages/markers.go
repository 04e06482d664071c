package messages

// Marker types: the events a kind journals and the effects it releases
// say so by a method, so that a kind's decision takes nothing else (a
// typo'd or foreign message is a compile error, not an event no Apply
// knows). The types of each marker are listed below it.

// IMBindingEvent is an event an IM binding journals (actors/imbinding).
type IMBindingEvent interface{ isIMBindingEvent() }

// IMBindingEffect is an effect an IM binding releases (actors/imbinding),
// besides its timers.
type IMBindingEffect interface{ isIMBindingEffect() }

// OutboxEvent is an event of a chat outbox (actors/chatout): each is an
// IM binding's too, as a binding keeps an outbox.
type OutboxEvent interface {
	IMBindingEvent
	isOutboxEvent()
}

// OutboxEffect is an effect of a chat outbox (actors/chatout).
type OutboxEffect interface {
	IMBindingEffect
	isOutboxEffect()
}

// Markers.

func (*IMAgentAskClosed) isIMBindingEvent()  {}
func (*IMAgentAskPending) isIMBindingEvent() {}
func (*IMAgentAsked) isIMBindingEvent()      {}
func (*IMAgentChanged) isIMBindingEvent()    {}
func (*IMBound) isIMBindingEvent()           {}
func (*IMChecked) isIMBindingEvent()         {}
func (*IMContextUsed) isIMBindingEvent()     {}
func (*IMDelivered) isIMBindingEvent()       {}
func (*IMEndNoted) isIMBindingEvent()        {}
func (*IMEnded) isIMBindingEvent()           {}
func (*IMFileReady) isIMBindingEvent()       {}
func (*IMLiveFailed) isIMBindingEvent()      {}
func (*IMLiveReleased) isIMBindingEvent()    {}
func (*IMLiveRolled) isIMBindingEvent()      {}
func (*IMLiveShown) isIMBindingEvent()       {}
func (*IMLiveWaiting) isIMBindingEvent()     {}
func (*IMOutboxAdded) isIMBindingEvent()     {}
func (*IMOutboxPartSent) isIMBindingEvent()  {}
func (*IMOutboxReleased) isIMBindingEvent()  {}
func (*IMOutboxSent) isIMBindingEvent()      {}
func (*IMPromptClosed) isIMBindingEvent()    {}
func (*IMPromptOpened) isIMBindingEvent()    {}
func (*IMRenamed) isIMBindingEvent()         {}
func (*IMReopened) isIMBindingEvent()        {}
func (*IMRepliesRead) isIMBindingEvent()     {}
func (*IMResumed) isIMBindingEvent()         {}
func (*IMSessionLostSaid) isIMBindingEvent() {}
func (*IMSetupStep) isIMBindingEvent()       {}
func (*IMSummaryDone) isIMBindingEvent()     {}
func (*IMSummaryOwed) isIMBindingEvent()     {}
func (*IMSwitchSeen) isIMBindingEvent()      {}
func (*IMTurnEnded) isIMBindingEvent()       {}
func (*IMTurnEnding) isIMBindingEvent()      {}
func (*IMTurnRead) isIMBindingEvent()        {}
func (*IMTurnStarted) isIMBindingEvent()     {}
func (*IMTypingHeld) isIMBindingEvent()      {}
func (*IMUpdateSeen) isIMBindingEvent()      {}
func (*IMWorkEnded) isIMBindingEvent()       {}
func (*IMWorkStarted) isIMBindingEvent()     {}

func (*IMOutboxAdded) isOutboxEvent()    {}
func (*IMOutboxPartSent) isOutboxEvent() {}
func (*IMOutboxReleased) isOutboxEvent() {}
func (*IMOutboxSent) isOutboxEvent()     {}

func (*IMAdoptWindow) isIMBindingEffect()       {}
func (*IMAnswerAgentPrompt) isIMBindingEffect() {}
func (*IMAnswerPress) isIMBindingEffect()       {}
func (*IMBoardRow) isIMBindingEffect()          {}
func (*IMBoardShow) isIMBindingEffect()         {}
func (*IMCheckWindow) isIMBindingEffect()       {}
func (*IMClearButtons) isIMBindingEffect()      {}
func (*IMCloseWindow) isIMBindingEffect()       {}
func (*IMCreateWindow) isIMBindingEffect()      {}
func (*IMFindAgentSession) isIMBindingEffect()  {}
func (*IMFollowTranscript) isIMBindingEffect()  {}
func (*IMLaunchAgent) isIMBindingEffect()       {}
func (*IMListAgentSessions) isIMBindingEffect() {}
func (*IMListBindings) isIMBindingEffect()      {}
func (*IMListDirectory) isIMBindingEffect()     {}
func (*IMListFreeWindows) isIMBindingEffect()   {}
func (*IMLiveEdit) isIMBindingEffect()          {}
func (*IMLiveSend) isIMBindingEffect()          {}
func (*IMReadHistory) isIMBindingEffect()       {}
func (*IMReadUsage) isIMBindingEffect()         {}
func (*IMRecallMemory) isIMBindingEffect()      {}
func (*IMRememberMemory) isIMBindingEffect()    {}
func (*IMRenameWindow) isIMBindingEffect()      {}
func (*IMSaveFile) isIMBindingEffect()          {}
func (*IMScreenshot) isIMBindingEffect()        {}
func (*IMSendChat) isIMBindingEffect()          {}
func (*IMSendKeys) isIMBindingEffect()          {}
func (*IMSendToWindow) isIMBindingEffect()      {}
func (*IMSetMode) isIMBindingEffect()           {}
func (*IMShowMemory) isIMBindingEffect()        {}
func (*IMStopFollowing) isIMBindingEffect()     {}
func (*IMWatchPane) isIMBindingEffect()         {}

func (*IMSendChat) isOutboxEffect() {}
