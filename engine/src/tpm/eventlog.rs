//! TCG PC Client event logs (being written).
