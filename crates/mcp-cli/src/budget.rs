//! `mcp-host budget`.

use std::path::Path;

use crate::exit::{Code, Failure};
use crate::manage::Context;
use crate::output::Out;

pub(crate) async fn run(_cx: &Context, _out: &Out, _gateway: Option<&Path>) -> Result<(), Failure> {
    Err(Failure::new(Code::Other, "budget: not built yet"))
}
