-- Flow control (SPEC section 11): at most this many attempts of the project start per second; null, no limit.
ALTER TABLE projects ADD COLUMN delivery_rate_per_second REAL;
