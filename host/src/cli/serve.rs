//! `serve`: the engines over JSON-RPC on stdin and stdout, for an agent in any language.

use anyhow::{bail, Context as _, Result};

use crate::{
    config::Settings,
    serve::{
        stdio::{serve_lines, Stop},
        Server,
    },
};

/// Serves until `shutdown`, the end of input, or the client gone; sessions without a config of
/// their own use `settings`, and every session takes `overrides` (the command line's flags).
pub(super) fn serve_stdio(
    settings: &Settings,
    args: &super::ServeArgs,
    overrides: crate::serve::Overrides,
) -> Result<()> {
    let limits = crate::config::Limits {
        address_space_mb: args.limit_address_space_mb,
        cpu_seconds: args.limit_cpu_seconds,
    };
    crate::isolation::limits::limit_this_process(&limits).map_err(anyhow::Error::msg)?;
    if let Some(parent) = args.parent_pid {
        crate::isolation::limits::end_with_parent(parent).map_err(anyhow::Error::msg)?;
    }
    let mut server = Server::with_overrides(settings.clone(), overrides);
    // A `compress` request carries the whole context: read it in large pieces, not stdin's 8 KiB.
    let input = std::io::BufReader::with_capacity(1 << 20, std::io::stdin().lock());
    let stop = serve_lines(&mut server, input, super::stdout::protocol_stdout())
        .context("reading requests from stdin")?;
    if let Stop::Incompatible(message) = stop {
        bail!(message);
    }
    tracing::info!("stopped: {stop:?}");
    Ok(())
}
