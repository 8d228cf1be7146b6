-- Dashboard users, their teams and their sessions (SPEC section 7). Same tables as SQLite's 0002.

CREATE TABLE users (
  id            text PRIMARY KEY,
  -- Stored lower-cased: one account per address whatever the case it is typed in.
  email         text NOT NULL UNIQUE,
  -- scrypt$N$r$p$salt$hash (crypto/passwords.ts): the parameters travel with the hash.
  password_hash text NOT NULL,
  is_operator   boolean NOT NULL,
  created_at    bigint NOT NULL,
  updated_at    bigint NOT NULL
);

CREATE TABLE team_memberships (
  user_id    text NOT NULL REFERENCES users (id),
  team_id    text NOT NULL REFERENCES teams (id),
  created_at bigint NOT NULL,
  PRIMARY KEY (user_id, team_id)
);

-- Only the SHA-256 of a session token is stored: a copy of this table logs nobody in.
-- In the database, not in memory, so every instance on one PostgreSQL knows every session.
CREATE TABLE sessions (
  token_hash bytea PRIMARY KEY,
  user_id    text NOT NULL REFERENCES users (id),
  csrf_token text NOT NULL,
  created_at bigint NOT NULL,
  expires_at bigint NOT NULL
);
CREATE INDEX sessions_user ON sessions (user_id);
CREATE INDEX sessions_expires ON sessions (expires_at);
