package faketelegram

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// MaxDownload is the largest file getFile lets a bot download; a larger
// one is answered 400 "file is too big", as Telegram does.
const MaxDownload = 20 << 20

// files are the files users sent (Photo, Document, Voice, BigDocument),
// which getFile and the file endpoint serve.
type files struct {
	mu   sync.Mutex
	next int
	byID map[string]*file
	// downloads counts the bytes served, by file_id.
	downloads map[string]int
	// hold, while not nil, holds every download until it is closed
	// (HoldDownloads); held counts the downloads it holds now.
	hold chan struct{}
	held int
}

type file struct {
	id, path string
	data     []byte
	size     int64
}

// add registers a file of size bytes (data, or none for a file too big
// to serve) under a new file_id, with a file_path in dir.
func (fs *files) add(dir, ext string, data []byte, size int64) *file {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.byID == nil {
		fs.byID, fs.downloads = map[string]*file{}, map[string]int{}
	}
	fs.next++
	f := &file{id: fmt.Sprintf("file-%d-%s", fs.next, dir), path: fmt.Sprintf("%s/file_%d%s", dir, fs.next, ext), data: data, size: size}
	fs.byID[f.id] = f
	return f
}

// getFile answers a file's size and path, or 400 for an unknown file_id
// or one over MaxDownload.
func (s *Server) getFile(p params) (any, *apiErr) {
	s.files.mu.Lock()
	defer s.files.mu.Unlock()
	f, ok := s.files.byID[p["file_id"]]
	switch {
	case !ok:
		return nil, badRequest("invalid file_id")
	case f.size > MaxDownload:
		return nil, badRequest("file is too big")
	}
	return map[string]any{"file_id": f.id, "file_unique_id": "u" + f.id, "file_size": f.size, "file_path": f.path}, nil
}

// serveFile serves /file/bot<token>/<file_path>: the file's bytes.
func (s *Server) serveFile(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/file/bot")
	token, path, ok := strings.Cut(rest, "/")
	if !ok || token != s.token || s.revoked.Load() {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	s.files.mu.Lock()
	var found *file
	for _, f := range s.files.byID {
		if f.path == path && int64(len(f.data)) == f.size {
			found = f
		}
	}
	if found != nil {
		s.files.downloads[found.id]++
	}
	hold := s.files.hold
	if hold != nil {
		s.files.held++
	}
	s.files.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
		}
		s.files.mu.Lock()
		s.files.held--
		s.files.mu.Unlock()
	}
	if found == nil {
		http.Error(w, "Not Found", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(found.data)
}

// HoldDownloads holds every file download from now on until release is
// called (a slow download); HeldDownloads counts those held.
func (s *Server) HoldDownloads() (release func()) {
	s.files.mu.Lock()
	defer s.files.mu.Unlock()
	hold := make(chan struct{})
	s.files.hold = hold
	return func() {
		s.files.mu.Lock()
		defer s.files.mu.Unlock()
		if s.files.hold == hold {
			s.files.hold = nil
			close(hold)
		}
	}
}

// HeldDownloads is how many downloads HoldDownloads holds now.
func (s *Server) HeldDownloads() int {
	s.files.mu.Lock()
	defer s.files.mu.Unlock()
	return s.files.held
}

// Downloads is how many times the bytes of file_id were served.
func (s *Server) Downloads(fileID string) int {
	s.files.mu.Lock()
	defer s.files.mu.Unlock()
	return s.files.downloads[fileID]
}

// PhotoFile pushes a user's photo whose largest size is data (a small
// thumbnail comes first, as Telegram sends them), with a caption; it
// returns the update id and the largest size's file_id.
func (s *Server) PhotoFile(chatID, threadID, userID int64, data []byte, caption string) (int64, string) {
	thumb := s.files.add("photos", ".jpg", []byte("thumbnail"), 9)
	big := s.files.add("photos", ".jpg", data, int64(len(data)))
	return s.userMessage(chatID, threadID, userID, func(m map[string]any) {
		m["photo"] = []map[string]any{
			{"file_id": thumb.id, "file_unique_id": "u" + thumb.id, "width": 90, "height": 60, "file_size": thumb.size},
			{"file_id": big.id, "file_unique_id": "u" + big.id, "width": 1280, "height": 960, "file_size": big.size},
		}
		if caption != "" {
			m["caption"] = caption
		}
	}), big.id
}

// Document pushes a user's document named name (the sender's text, any
// name at all) with data and a caption; it returns the update id.
func (s *Server) Document(chatID, threadID, userID int64, name string, data []byte, caption string) int64 {
	return s.document(chatID, threadID, userID, name, data, int64(len(data)), caption)
}

// BigDocument pushes a document of size bytes, which getFile refuses when
// it is over MaxDownload (its bytes are never served).
func (s *Server) BigDocument(chatID, threadID, userID int64, name string, size int64, caption string) int64 {
	return s.document(chatID, threadID, userID, name, nil, size, caption)
}

func (s *Server) document(chatID, threadID, userID int64, name string, data []byte, size int64, caption string) int64 {
	f := s.files.add("documents", "", data, size)
	return s.userMessage(chatID, threadID, userID, func(m map[string]any) {
		m["document"] = map[string]any{"file_id": f.id, "file_unique_id": "u" + f.id, "file_name": name,
			"mime_type": "application/octet-stream", "file_size": size}
		if caption != "" {
			m["caption"] = caption
		}
	})
}

// Voice pushes a user's voice note (OGG/Opus bytes); it returns the
// update id.
func (s *Server) Voice(chatID, threadID, userID int64, data []byte) int64 {
	f := s.files.add("voice", ".oga", data, int64(len(data)))
	return s.userMessage(chatID, threadID, userID, func(m map[string]any) {
		m["voice"] = map[string]any{"file_id": f.id, "file_unique_id": "u" + f.id, "duration": 1, "mime_type": "audio/ogg", "file_size": f.size}
	})
}
