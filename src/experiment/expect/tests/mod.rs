//! Tests of the expectation language: parsing (valid forms and exact error
//! messages), the name check, and the judges on hand-built timelines.

mod check;
mod eval_breaker;
mod eval_pool;
mod eval_route;
mod figures;
mod fixture;
mod parse_err;
mod parse_ok;
mod regress;
