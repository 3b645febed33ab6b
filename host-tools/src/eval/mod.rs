//! Measuring a model: error rates against references ([`rates`]) and a quantized model
//! against its float reference ([`check`]).

pub mod check;
pub mod rates;
