//! Project chores, run as `cargo xtask <command>` (the alias is in `.cargo/config.toml`).
//!
//! - `cargo xtask plugins [--debug]`: builds every workspace package that declares
//!   `[package.metadata.ctxhost] plugin = "<name>"` and stages its library in
//!   `plugins/context_engine/<name>/`, next to the committed `plugin.yaml`.
//! - `cargo xtask bench [FILTER]`: runs the benchmarks and prints the ratios of their targets;
//!   `cargo xtask bench lcm`: the lcm store's figures beside lossless-hermes-py's.
//! - `cargo xtask gen-heavy OUT [--messages N] [--shape S] [--format F]`: writes a benchmark
//!   session to a file.
//! - `cargo xtask retention`: the fact-retention table alone (part of `bench`).

mod bench;
mod generate;
mod plugins;
mod retention;

use std::path::PathBuf;

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
    /// Print the fact-retention table (16k and 8k windows; the made-up corpus, the examples and
    /// ../shared's Hermes and SWE-agent transcripts), as `bench` does, without the timings.
    Retention,
    /// Write a benchmark session to a file: OpenAI JSONL when it ends in .jsonl, else a JSON
    /// array. By default the heavy session (tool outputs of several KB; 5,000 messages are
    /// ~8.7 MB); `--shape tool-heavy --messages 10000` is the one the observers benchmark replays.
    GenHeavy {
        /// Where to write it.
        out: PathBuf,
        /// How many messages.
        #[arg(long, default_value_t = 5_000)]
        messages: usize,
        /// Which session.
        #[arg(long, value_enum, default_value_t = generate::Shape::Heavy)]
        shape: generate::Shape,
        /// The file format.
        #[arg(long, value_enum, default_value_t = generate::Written::Openai)]
        format: generate::Written,
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
        Command::Retention => bench::run_retention_table(),
        Command::GenHeavy {
            out,
            messages,
            shape,
            format,
        } => generate::write_session(&out, shape, messages, format).map(|_| ()),
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
