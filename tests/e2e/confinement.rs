//! Agents confined by Landlock: a vendor process (here `fake-acp`, an ACP agent that
//! reads, writes and runs shell commands on request) may use its session's working
//! directory, but not the server's data directory nor another directory outside it
//! (standing for another user's root); the shells it starts are held to the same. The
//! same agent with `--confine-agents off` reads the admin token, which shows the
//! confined checks can fail. Without Landlock in the kernel the confined test is built
//! ignored (`tests/build.rs`), so it shows as skipped.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};
use tandem_tests::events::texts;
use tandem_tests::{Server, ServerOptions, TempDir, WsClient};

/// A server whose vendor `fake` is the fake ACP agent, and the paths the tests use.
struct World {
    server: Server,
    /// The session's working directory: `ROOT/alice/work`.
    work: PathBuf,
    /// A file in another directory under the workspace root: `ROOT/bob/secret.txt`.
    other: PathBuf,
    /// The data directory's `admin-token`.
    token_file: PathBuf,
}

impl World {
    /// Starts the server with `args` besides the config; the workspace root is the test
    /// directory, the data directory `ROOT/data`.
    fn start(label: &str, args: &[&str]) -> World {
        let dir = Arc::new(TempDir::new(label));
        let root = dir.path().to_path_buf();
        let work = root.join("alice/work");
        let bob = root.join("bob");
        for d in [&work, &bob] {
            std::fs::create_dir_all(d).unwrap();
        }
        let other = bob.join("secret.txt");
        std::fs::write(&other, "bob's secret").unwrap();
        let config = root.join("tandem.toml");
        std::fs::write(
            &config,
            format!(
                "[vendors.fake]\nprotocol = \"acp\"\nbin = {}\nenv = {{ CONFINE_TEST_MARK = {}, FAKE_ACP_LINGER = \"60\" }}\n",
                json!(env!("CARGO_BIN_EXE_fake-acp")),
                json!(root.display().to_string())
            ),
        )
        .unwrap();
        let mut opts = ServerOptions::with_config(&config);
        opts.args.extend(args.iter().map(|a| (*a).to_string()));
        let server = Server::start_process_in(dir, opts);
        World {
            server,
            work,
            other,
            token_file: root.join("data/admin-token"),
        }
    }

    /// A `fake` session working in `work`, subscribed.
    async fn session(&self, ws: &mut WsClient) -> String {
        let reply = ws
            .ok(
                json!({"type": "session.create", "vendor": "fake", "title": "confined",
                       "cwd": self.work.display().to_string()}),
            )
            .await;
        let id = reply["session"]["id"].as_str().unwrap().to_string();
        ws.subscribe(&id, 0).await;
        id
    }

    /// The `GET /vendors` entry of `id`.
    async fn vendor(&self, id: &str) -> Value {
        let (status, body) = self.server.get("/api/v1/vendors").await;
        assert_eq!(status, 200, "{body}");
        body["vendors"]
            .as_array()
            .and_then(|v| v.iter().find(|v| v["id"] == id).cloned())
            .unwrap_or_else(|| panic!("no vendor {id} in {body}"))
    }
}

/// The agent's answer to `prompt`.
async fn ask(ws: &mut WsClient, id: &str, prompt: &str) -> String {
    let events = ws.turn(id, prompt).await;
    texts(&events, "assistant_message").join("\n")
}

fn read(path: &Path) -> String {
    format!("read {}", path.display())
}

/// A confined agent dies with its server, also when the server is killed with
/// SIGKILL and stops nothing itself. The agent here stays 60 s after its stdin
/// closes (`FAKE_ACP_LINGER`), as claude-code-acp and codex-acp did: they outlived
/// killed servers.
#[actix_rt::test]
#[cfg_attr(not(has_landlock), ignore = "the kernel does not enforce Landlock")]
async fn a_confined_agent_dies_with_a_killed_server() {
    let w = World::start("confined-kill", &[]);
    let mark = format!(
        "CONFINE_TEST_MARK={}",
        w.work.parent().and_then(Path::parent).unwrap().display()
    );
    let mut ws = w.server.ws().await;
    let id = w.session(&mut ws).await;
    let note = w.work.join("alive.txt");
    std::fs::write(&note, "yes").unwrap();
    assert_eq!(ask(&mut ws, &id, &read(&note)).await, "read: yes");
    let agents = tandem_tests::procs::processes_with(&mark);
    assert!(!agents.is_empty(), "no agent process carries {mark}");
    drop(ws);
    let _dir = w.server.kill();
    tandem_tests::eventually_within(
        "the agent to die with the server",
        std::time::Duration::from_secs(10),
        async || {
            agents
                .iter()
                .all(|pid| !tandem_tests::procs::is_alive(*pid))
                .then_some(())
        },
    )
    .await;
}

#[actix_rt::test]
#[cfg_attr(not(has_landlock), ignore = "the kernel does not enforce Landlock")]
async fn a_confined_agent_uses_its_working_directory_but_not_the_data_dir_or_another_root() {
    let w = World::start("confined", &[]);
    let token = std::fs::read_to_string(&w.token_file).unwrap();
    assert!(!token.trim().is_empty());
    let mut ws = w.server.ws().await;
    let id = w.session(&mut ws).await;

    let answer = ask(&mut ws, &id, &read(&w.token_file)).await;
    assert!(
        answer.starts_with("read failed:") && answer.contains("Permission denied"),
        "{answer}"
    );
    assert!(!answer.contains(token.trim()), "{answer}");
    let answer = ask(&mut ws, &id, &read(&w.other)).await;
    assert!(
        answer.starts_with("read failed:") && answer.contains("Permission denied"),
        "{answer}"
    );
    // Nor can it write there.
    let answer = ask(
        &mut ws,
        &id,
        &format!("write {} overwritten", w.other.display()),
    )
    .await;
    assert!(answer.starts_with("write failed:"), "{answer}");
    assert_eq!(std::fs::read_to_string(&w.other).unwrap(), "bob's secret");

    // Its own work succeeds.
    let note = w.work.join("note.txt");
    let answer = ask(&mut ws, &id, &format!("write {} hello", note.display())).await;
    assert_eq!(answer, format!("wrote {}", note.display()));
    assert_eq!(std::fs::read_to_string(&note).unwrap(), "hello");
    assert_eq!(ask(&mut ws, &id, &read(&note)).await, "read: hello");

    // A shell the agent starts is confined too, and has a private temporary directory.
    let answer = ask(
        &mut ws,
        &id,
        &format!("run cat {} || echo denied", w.token_file.display()),
    )
    .await;
    assert!(answer.contains("denied"), "{answer}");
    assert!(!answer.contains(token.trim()), "{answer}");
    let answer = ask(
        &mut ws,
        &id,
        "run echo scratch > \"$TMPDIR/t\" && cat \"$TMPDIR/t\" && basename \"$TMPDIR\"",
    )
    .await;
    assert!(
        answer.starts_with("ran: 0 scratch") && answer.contains("tandem-agent-"),
        "{answer}"
    );

    // `/vendors` says so; the scripted agent runs in the server, so it has no entry.
    let fake = w.vendor("fake").await;
    assert_eq!(fake["confinement"], "landlock", "{fake}");
    let scripted = w.vendor("scripted").await;
    assert!(scripted.get("confinement").is_none(), "{scripted}");
}

#[actix_rt::test]
async fn with_confinement_off_the_agent_reads_the_admin_token() {
    let w = World::start("unconfined", &["--confine-agents", "off"]);
    let token = std::fs::read_to_string(&w.token_file).unwrap();
    let mut ws = w.server.ws().await;
    let id = w.session(&mut ws).await;
    let answer = ask(&mut ws, &id, &read(&w.token_file)).await;
    assert_eq!(answer, format!("read: {token}"));
    let answer = ask(&mut ws, &id, &read(&w.other)).await;
    assert_eq!(answer, "read: bob's secret");
    let fake = w.vendor("fake").await;
    assert_eq!(fake["confinement"], "none", "{fake}");
    assert!(
        fake["confinementProblem"]
            .as_str()
            .is_some_and(|p| p.contains("--confine-agents off")),
        "{fake}"
    );
}

/// A confined CLI starts the config's stdio MCP servers itself, so the launcher every
/// vendor process gets lets it read their programs (here one outside every allowed
/// path). Checked on the options `tandem serve` would run with.
#[test]
#[cfg_attr(not(has_landlock), ignore = "the kernel does not enforce Landlock")]
fn the_configs_mcp_server_programs_are_readable_to_confined_agents() {
    let dir = TempDir::new("confine-mcp");
    let program = dir.path().join("tools/server.sh");
    std::fs::create_dir_all(program.parent().unwrap()).unwrap();
    std::fs::write(&program, "#!/bin/sh\n").unwrap();
    let config = dir.path().join("tandem.toml");
    std::fs::write(
        &config,
        format!("[mcp_servers.tool]\ncommand = {}\n", json!(program)),
    )
    .unwrap();
    let args: Vec<String> = [
        "--config".as_ref(),
        config.as_os_str(),
        "--data-dir".as_ref(),
        dir.path().join("data").as_os_str(),
        "--workspace-root".as_ref(),
        dir.path().as_os_str(),
        "--confine-agents".as_ref(),
        "on".as_ref(),
    ]
    .iter()
    .map(|a| a.to_string_lossy().into_owned())
    .collect();
    let opts = tandem_http::cli::serve_options(&args, tandem_tests::server::server_binary())
        .unwrap_or_else(|e| panic!("{e}"));
    let confinement = &opts.runtime.confinement;
    let Some(launcher) = &confinement.launcher else {
        panic!("not confined: {:?}", confinement.problem);
    };
    assert!(
        launcher.also_read.contains(&program),
        "{:?}",
        launcher.also_read
    );
    for vendor in &opts.runtime.vendors.vendors {
        let given = vendor.process.confine.as_ref().map(|l| &l.also_read);
        assert_eq!(given, Some(&launcher.also_read), "{}", vendor.id);
    }
}
