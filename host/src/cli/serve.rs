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
/// their own use `settings`.
pub(super) fn serve_stdio(settings: &Settings) -> Result<()> {
    let mut server = Server::new(settings.clone());
    let stop = serve_lines(&mut server, std::io::stdin().lock(), std::io::stdout().lock())
        .context("reading requests from stdin")?;
    if let Stop::Incompatible(message) = stop {
        bail!(message);
    }
    tracing::info!("stopped: {stop:?}");
    Ok(())
}
