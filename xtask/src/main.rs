//! Project chores, run as `cargo xtask <command>` (the alias is in `.cargo/config.toml`).
//!
//! - `cargo xtask plugins [--debug]`: builds every workspace package that declares
//!   `[package.metadata.ctxhost] plugin = "<name>"` and stages its library in
//!   `plugins/context_engine/<name>/`, next to the committed `plugin.yaml`.
//! - `cargo xtask bench [FILTER]`: runs the benchmarks and prints the ratios of their targets;
//!   `cargo xtask bench lcm`: the lcm store's figures beside lossless-hermes-py's.

mod bench;
mod plugins;

use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::plugins::Profile;

#[derive(Parser)]
#[command(
    name = "cargo xtask",
    bin_name = "cargo xtask",
    about = "ctxhost's project chores"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build every plugin library and stage it in plugins/context_engine/<name>/.
    Plugins(PluginsArgs),
    /// Run the benchmarks (criterion and peak memory) and print the ratios the targets use.
    Bench {
        /// Only the criterion benchmarks whose name contains this.
        filter: Option<String>,
    },
}

#[derive(Args)]
struct PluginsArgs {
    /// Build with the dev profile (unoptimised, quicker to build) instead of release.
    #[arg(long)]
    debug: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Plugins(args) => {
            let profile = if args.debug {
                Profile::Dev
            } else {
                Profile::Release
            };
            plugins::build_and_stage(profile)
        }
        Command::Bench { filter } => bench::run_benchmarks(filter.as_deref()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // `{:#}` prints the whole context chain on one line.
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
