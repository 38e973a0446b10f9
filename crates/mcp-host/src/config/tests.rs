//! Tests of loading, merging, validation, detection, secrets and edits.
