//! The page (stub).
