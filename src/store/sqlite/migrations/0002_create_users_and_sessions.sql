-- Dashboard users, their teams and their sessions (SPEC section 7).

CREATE TABLE users (
  id            TEXT PRIMARY KEY,
  -- Stored lower-cased: one account per address whatever the case it is typed in.
  email         TEXT NOT NULL UNIQUE,
  -- scrypt$N$r$p$salt$hash (crypto/passwords.ts): the parameters travel with the hash.
  password_hash TEXT NOT NULL,
  is_operator   INTEGER NOT NULL,
  created_at    INTEGER NOT NULL,
  updated_at    INTEGER NOT NULL
) STRICT;

CREATE TABLE team_memberships (
  user_id    TEXT NOT NULL REFERENCES users (id),
  team_id    TEXT NOT NULL REFERENCES teams (id),
  created_at INTEGER NOT NULL,
  PRIMARY KEY (user_id, team_id)
) STRICT, WITHOUT ROWID;

-- Only the SHA-256 of a session token is stored: a copy of this table logs nobody in.
CREATE TABLE sessions (
  token_hash BLOB PRIMARY KEY,
  user_id    TEXT NOT NULL REFERENCES users (id),
  csrf_token TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX sessions_user ON sessions (user_id);
CREATE INDEX sessions_expires ON sessions (expires_at);
