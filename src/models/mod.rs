//! Models as tch modules, and the recipes that train them.
pub mod backbone;
pub mod gat;
pub mod gcn;
pub mod kprop;
pub mod lpgnn;
pub mod sage;
