package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// The SQLite baseline stores state the way the TypeScript implementation
// journals its runtime state: one JSON row per entity, rewritten whole on
// every change, each write its own durable transaction.

// sqliteDSN makes every connection durable: WAL with synchronous=FULL fsyncs
// the WAL on every commit. busy_timeout lets pooled writers wait for the
// write lock instead of failing with SQLITE_BUSY.
func sqliteDSN(path string) string {
	return "file:" + path + "?_pragma=busy_timeout(60000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)"
}

// openSQLite opens (creating if needed) the baseline database in dir with a
// pool of at most conns connections, and checks that the pragmas took.
func openSQLite(ctx context.Context, dir string, conns int) (*sql.DB, error) {
	db, err := sql.Open("sqlite", sqliteDSN(filepath.Join(dir, "state.db")))
	if err != nil {
		return nil, fmt.Errorf("bench: open sqlite: %w", err)
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS entity_state (id TEXT PRIMARY KEY, state TEXT NOT NULL)`); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("bench: create sqlite table: %w", err)
	}
	var mode string
	var sync int
	if err := db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("bench: read journal_mode: %w", err)
	}
	if err := db.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&sync); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("bench: read synchronous: %w", err)
	}
	if !strings.EqualFold(mode, "wal") || sync != 2 {
		_ = db.Close()
		return nil, fmt.Errorf("bench: sqlite is not durable: journal_mode=%s synchronous=%d", mode, sync)
	}
	return db, nil
}

// sqliteWriter rewrites one entity's row per event, as the baseline does.
type sqliteWriter struct {
	stmt  *sql.Stmt
	state entityState
}

// upsertSQL replaces the entity's whole state row.
const upsertSQL = `INSERT OR REPLACE INTO entity_state (id, state) VALUES (?, ?)`

// write applies one event to the in-memory state and durably rewrites the
// row: encode the whole state as JSON, one autocommit statement.
func (w *sqliteWriter) write(ctx context.Context) error {
	w.state.Seq++
	w.state.Total++
	w.state.Recent = appendRecent(w.state.Recent, noteFor(w.state.ID, w.state.Seq))
	b, err := json.Marshal(&w.state)
	if err != nil {
		return fmt.Errorf("bench: encode state: %w", err)
	}
	if _, err := w.stmt.ExecContext(ctx, w.state.ID, b); err != nil {
		return fmt.Errorf("bench: sqlite write %s: %w", w.state.ID, err)
	}
	return nil
}

// fillSQLite writes the rows of n entities, each at state seq, in one
// transaction (setup, not measured).
func fillSQLite(ctx context.Context, db *sql.DB, n int, seq uint64) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("bench: fill sqlite: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	stmt, err := tx.PrepareContext(ctx, upsertSQL)
	if err != nil {
		return fmt.Errorf("bench: fill sqlite: %w", err)
	}
	for i := range n {
		id := entityID(i)
		b, err := json.Marshal(stateAfter(id, seq, true))
		if err != nil {
			return fmt.Errorf("bench: fill sqlite: %w", err)
		}
		if _, err := stmt.ExecContext(ctx, id, b); err != nil {
			return fmt.Errorf("bench: fill sqlite: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("bench: fill sqlite: %w", err)
	}
	return nil
}

// readSQLite reads the rows with lo <= rowid < hi; decode also parses each
// row's JSON into an entityState. It returns how many rows it read.
func readSQLite(ctx context.Context, db *sql.DB, lo, hi int64, decode bool) (int64, error) {
	rows, err := db.QueryContext(ctx, `SELECT id, state FROM entity_state WHERE rowid >= ? AND rowid < ?`, lo, hi)
	if err != nil {
		return 0, fmt.Errorf("bench: read sqlite: %w", err)
	}
	defer rows.Close()
	var n int64
	var id string
	var raw sql.RawBytes
	for rows.Next() {
		if err := rows.Scan(&id, &raw); err != nil {
			return n, fmt.Errorf("bench: read sqlite: %w", err)
		}
		if decode {
			var s entityState
			if err := json.Unmarshal(raw, &s); err != nil {
				return n, fmt.Errorf("bench: decode sqlite row %s: %w", id, err)
			}
			if s.ID != id {
				return n, fmt.Errorf("bench: sqlite row %s holds state of %s", id, s.ID)
			}
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return n, fmt.Errorf("bench: read sqlite: %w", err)
	}
	return n, nil
}

// jsonSize is the length of v encoded as JSON.
func jsonSize(v any) (int, error) {
	b, err := json.Marshal(v)
	return len(b), err
}
