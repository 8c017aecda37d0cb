//! Privacy attacks on GNNs.
