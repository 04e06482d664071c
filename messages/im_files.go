package messages

// This file holds the vocabulary of files sent in a chat thread (a photo,
// a document, a voice note): the binding journals the update first, asks
// the front end to save the file in the inbox of its working directory
// (IMSaveFile), and types the file's path once it is saved.

// IMFile is a file a chat message carried, as the chat adapter names it
// (im/chat.File).
type IMFile struct {
	// Kind is "photo", "document", "voice", "audio" or "video".
	Kind string `json:"kind"`
	// Name is the sender's file name ("" none): text, never a path.
	Name string `json:"name,omitempty"`
	// Size is its size in bytes (0 unknown).
	Size int64  `json:"size,omitempty"`
	Mime string `json:"mime,omitempty"`
	// Ref is the adapter's opaque reference to download it by.
	Ref string `json:"ref"`
}

// IMSaveFile downloads File of the binding's thread into the inbox of
// directory Dir (im.inbox_dir), under a name made of At (Unix
// milliseconds, the time the update came) and the file's own name. A voice
// note is transcribed too when im.transcribe is set. Result:
// *IMFileSaved.
type IMSaveFile struct {
	UpdateID int64  `json:"updateID"`
	At       int64  `json:"at"`
	Dir      string `json:"dir"`
	File     IMFile `json:"file"`
}

// IMFileSaved reports an IMSaveFile: Path is the saved file's absolute
// path, or Err says why it was not saved (TooLarge: the file is over the
// platform's or im.max_file_mb's limit). Transcript is what the
// transcriber printed for a voice note ("" none; TranscribeErr says why
// it failed).
type IMFileSaved struct {
	UpdateID      int64  `json:"updateID"`
	Path          string `json:"path,omitempty"`
	Err           string `json:"err,omitempty"`
	TooLarge      bool   `json:"tooLarge,omitempty"`
	Transcript    string `json:"transcript,omitempty"`
	TranscribeErr string `json:"transcribeErr,omitempty"`
}

// IMFileReady records the file of update UpdateID saved, its line to type
// being Text, or not saved (Dropped): it leaves its place in the queue
// either way, and the messages behind it may be typed.
type IMFileReady struct {
	UpdateID int64  `json:"updateID"`
	Text     string `json:"text,omitempty"`
	Dropped  bool   `json:"dropped,omitempty"`
}

func init() {
	Register[IMFileReady]("im.file_ready", 1)
}
