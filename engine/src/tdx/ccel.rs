//! CC event log replay (to be written).
