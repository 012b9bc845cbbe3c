//! The node's endpoints: the `init.API` service and its request checks, the verify service, and the fair-admission
//! limits and metrics of the node's endpoints.

pub mod endpoint_limits;
pub(crate) mod init;
pub(crate) mod node_metrics;
pub(crate) mod request;
pub mod verifysvc;
