//! `tandem doctor`: checks each vendor CLI the way `tandem serve` would find it (same
//! config file, same environment) without calling a model, prints what it found and
//! what to fix, and exits non-zero when a vendor that is installed or configured
//! cannot work, or when no real vendor can. It also says whether agents run confined
//! (Landlock) and, when they do, checks the CLIs confined, as `tandem serve` runs them.

use std::path::PathBuf;
use std::process::ExitCode;

use tandem_actors::adapter::health::{CliProfile, Health, VendorStatus};
use tandem_actors::adapter::{claude, codex, VendorId};

use crate::config_file::ConfigFile;

/// One vendor's line of the report.
struct Finding {
    /// What the vendor's folder says about its CLI (name, supported range).
    profile: &'static CliProfile,
    /// Named in the config file or by `TANDEM_*_BIN`: its absence is a problem.
    configured: bool,
    bin: Option<PathBuf>,
    health: Health,
}

/// Runs the checks and prints the report to stdout; `confine` is `--confine-agents`.
pub fn run(config: Option<PathBuf>, confine: bool) -> ExitCode {
    let file = match &config {
        Some(path) => match ConfigFile::load(path) {
            Ok(file) => file,
            Err(e) => {
                eprintln!("tandem doctor: {e}");
                return ExitCode::from(2);
            }
        },
        None => ConfigFile::default(),
    };
    let mut vendors = file.vendors(
        |key| std::env::var(key).ok(),
        std::env::var_os("PATH").as_deref(),
    );
    // What `tandem serve` with the default data directory and this config denies.
    let mut denied: Vec<PathBuf> = crate::server::default_data_dir().into_iter().collect();
    denied.extend(config.iter().filter_map(|c| c.canonicalize().ok()));
    let confinement = crate::confine::detect(confine, denied, None);
    for vendor in &mut vendors.vendors {
        vendor.process.confine = confinement.launcher.clone();
    }
    let configured = |env_key: &str, in_file: bool| {
        in_file || std::env::var(env_key).is_ok_and(|v| !v.is_empty())
    };
    let system = actix_rt::System::new();
    let findings = system.block_on(async {
        let mut out = Vec::new();
        let codex_in_file = file.vendors.codex.as_ref().is_some_and(|s| s.bin.is_some());
        let process = vendors.get(&VendorId::CODEX).map(|v| &v.process);
        out.push(Finding {
            profile: &codex::PROFILE,
            configured: configured("TANDEM_CODEX_BIN", codex_in_file),
            bin: process.map(|p| p.bin.clone()),
            health: codex::check(process).await,
        });
        let claude_in_file = file
            .vendors
            .claude
            .as_ref()
            .is_some_and(|s| s.bin.is_some());
        let process = vendors.get(&VendorId::CLAUDE).map(|v| &v.process);
        out.push(Finding {
            profile: &claude::PROFILE,
            configured: configured("TANDEM_CLAUDE_BIN", claude_in_file),
            bin: process.map(|p| p.bin.clone()),
            health: claude::check(process).await,
        });
        out
    });
    println!("Confinement: {}", crate::confine::describe(&confinement));
    let mut failed = false;
    for f in &findings {
        print_finding(f);
        let counts = f.configured || f.health.status != VendorStatus::Missing;
        failed |= counts && f.health.status.unusable();
    }
    if !findings.iter().any(|f| f.health.status == VendorStatus::Ok) {
        println!("no vendor CLI is usable: sessions can only use the built-in scripted agent");
        failed = true;
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn print_finding(f: &Finding) {
    let name = f.profile.name;
    let status = f.health.status.as_str();
    println!("{name} ({}): {status}", f.profile.id);
    if let Some(bin) = &f.bin {
        println!("  binary:    {}", bin.display());
    }
    if let Some(version) = &f.health.version {
        let range = format!(" (supported: {})", f.profile.range.describe());
        println!("  version:   {version}{range}");
    }
    match f.health.logged_in {
        Some(true) => println!("  login:     logged in"),
        Some(false) => println!("  login:     not logged in"),
        None if f.health.version.is_some() => {
            println!("  login:     not reported by the CLI (no tokens spent to find out)")
        }
        None => {}
    }
    if let Some(problem) = &f.health.problem {
        println!("  fix:       {problem}");
    }
}
