//! test targets
