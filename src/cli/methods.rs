//! `gnnaudit methods [NAME]`: the registry as users read it (every method, or one method's knobs
//! with their defaults, as a config table).
use crate::error::{Error, Result};
use crate::methods::registry::{describe, markdown_table};
use crate::methods::Method;
use clap::Args;

#[derive(Debug, Args)]
pub struct MethodsArgs {
    /// A method to describe (its knobs and their defaults); omit for the table of all methods.
    pub name: Option<String>,
}

pub fn run(a: MethodsArgs) -> Result<()> {
    match a.name {
        None => print!("{}", markdown_table()),
        Some(name) => {
            let m = Method::from_name(&name).ok_or_else(|| {
                Error::invalid("name", format!("unknown method '{name}' (known: {})", Method::names().join(", ")))
            })?;
            print!("{}", describe(m)?);
        }
    }
    Ok(())
}
