//! The command layer's own reports, above every pipeline folder: what needs several
//! of them at once (`s2s inspect` reads a model and names the firmware it needs; `s2s explore`
//! serves a model with the explorer's page), and `s2s explain`, a device's error codes
//! told back.

pub mod explain;
pub mod explore;
pub mod inspect;
