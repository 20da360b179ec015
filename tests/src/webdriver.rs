//! A small WebDriver client (W3C protocol over HTTP, on awc) that starts its own
//! chromedriver on a free loopback port and a headless Chromium with a fresh profile.
//! Dropping the [`Browser`] ends the WebDriver session (closing Chromium) and kills the
//! chromedriver process group, so a failing test leaves no browser behind.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use base64::Engine;
use serde_json::{json, Value};

use crate::vendor_clis::{self, require};
use crate::TempDir;

/// How long [`Browser::wait`] polls before it fails the test.
pub const WAIT: Duration = Duration::from_secs(30);

/// The W3C element reference key.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

pub use crate::vendor_clis::which;

/// Chromium and chromedriver; panics when one is missing (the browser tests are built
/// ignored then, outside CI: see `vendor_clis`).
pub fn browser_binaries() -> (PathBuf, PathBuf) {
    let why = "(apt-get install chromium chromium-driver)";
    (
        require(vendor_clis::chromium(), &format!("chromium {why}")),
        require(vendor_clis::chromedriver(), &format!("chromedriver {why}")),
    )
}

/// A headless Chromium driven through its own chromedriver.
pub struct Browser {
    driver: Child,
    driver_url: String,
    session: String,
    client: awc::Client,
    _profile: TempDir,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("no free port: {e}"))
}

impl Browser {
    /// Starts chromedriver and a browser window of `width`×`height` CSS pixels.
    pub async fn start(width: u32, height: u32) -> Browser {
        Browser::start_with(width, height, &[]).await
    }

    /// Like [`Browser::start`], with extra Chromium flags (e.g. `--force-dark-mode`).
    pub async fn start_with(width: u32, height: u32, extra: &[&str]) -> Browser {
        let (chromium, chromedriver) = browser_binaries();
        let port = free_port();
        // chromedriver runs under a small shell that leads its own process group and
        // watches this test process: if the test dies without unwinding (killed by the
        // runner), the shell ends the group, so no browser outlives its test.
        let driver = Command::new("sh")
            .arg("-c")
            .arg(
                "\"$2\" --port=\"$3\" --allowed-ips=127.0.0.1 >/dev/null 2>&1 &\n\
                 while kill -0 \"$1\" 2>/dev/null; do sleep 1; done\n\
                 kill -KILL 0",
            )
            .arg("tandem-webdriver")
            .arg(std::process::id().to_string())
            .arg(&chromedriver)
            .arg(port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its own process group, so Drop can end chromedriver and every browser
            // process it started, and nothing else.
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", chromedriver.display()));
        let profile = TempDir::new("chromium");
        let client = awc::Client::builder()
            .timeout(Duration::from_secs(120))
            .finish();
        let mut browser = Browser {
            driver,
            driver_url: format!("http://127.0.0.1:{port}"),
            session: String::new(),
            client,
            _profile: profile,
        };
        browser.wait_driver().await;
        let args = vec![
            "--headless".to_string(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--disable-quic".into(),
            "--no-first-run".into(),
            "--disable-background-networking".into(),
            "--disable-component-update".into(),
            "--disable-sync".into(),
            "--disable-dev-shm-usage".into(),
            "--enable-precise-memory-info".into(),
            format!("--window-size={width},{height}"),
            format!("--user-data-dir={}", browser._profile.path().display()),
        ];
        let args: Vec<String> = args
            .into_iter()
            .chain(extra.iter().map(|a| a.to_string()))
            .collect();
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": args},
        }}});
        let created = browser.call("POST", "/session", Some(caps)).await;
        browser.session = created["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no WebDriver session: {created}"))
            .to_string();
        browser
    }

    async fn wait_driver(&self) {
        for _ in 0..200 {
            if let Ok(mut resp) = self
                .client
                .get(format!("{}/status", self.driver_url))
                .send()
                .await
            {
                let v: Value = resp.json().await.unwrap_or(Value::Null);
                if v["value"]["ready"] == true {
                    return;
                }
            }
            actix_rt::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("chromedriver did not become ready");
    }

    /// One WebDriver command; returns its `value` or panics with the driver's error.
    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        match self.try_call(method, path, body).await {
            Ok(v) => v,
            Err(e) => panic!("WebDriver {method} {path}: {e}"),
        }
    }

    /// One WebDriver command; `Err` holds the driver's error value.
    async fn try_call(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, Value> {
        let url = format!("{}{path}", self.driver_url);
        let req = match method {
            "GET" => self.client.get(url),
            "DELETE" => self.client.delete(url),
            _ => self.client.post(url),
        };
        let sent = match body {
            Some(b) => req.send_json(&b).await,
            None if method == "POST" => req.send_json(&json!({})).await,
            None => req.send().await,
        };
        let mut resp = sent.unwrap_or_else(|e| panic!("WebDriver {method} {path}: {e}"));
        let v: Value = resp
            .json()
            .limit(256 << 20)
            .await
            .unwrap_or_else(|e| panic!("WebDriver {method} {path}: bad answer: {e}"));
        if !resp.status().is_success() {
            return Err(v["value"].clone());
        }
        Ok(v["value"].clone())
    }

    fn s(&self, rest: &str) -> String {
        format!("/session/{}{rest}", self.session)
    }

    /// Loads a URL and waits for the document.
    pub async fn goto(&self, url: &str) {
        self.call("POST", &self.s("/url"), Some(json!({"url": url})))
            .await;
    }

    /// Runs `script` (a function body; `arguments` holds `args`) and returns its value.
    pub async fn exec(&self, script: &str, args: Vec<Value>) -> Value {
        self.call(
            "POST",
            &self.s("/execute/sync"),
            Some(json!({"script": script, "args": args})),
        )
        .await
    }

    /// The `textContent` of the first element `css` matches (the script fails when
    /// none does).
    pub async fn text(&self, css: &str) -> Value {
        self.exec(
            "return document.querySelector(arguments[0]).textContent;",
            vec![json!(css)],
        )
        .await
    }

    /// Runs an async script: it calls `arguments[arguments.length - 1](result)`.
    pub async fn exec_async(&self, script: &str, args: Vec<Value>) -> Value {
        self.call(
            "POST",
            &self.s("/execute/async"),
            Some(json!({"script": script, "args": args})),
        )
        .await
    }

    /// Polls `expr` (a JS expression) until it is truthy and returns its value;
    /// panics after [`WAIT`] saying what was awaited.
    pub async fn wait(&self, what: &str, expr: &str) -> Value {
        self.wait_within(what, expr, WAIT).await
    }

    /// [`Browser::wait`] with its own limit, for what takes long by design.
    pub async fn wait_within(&self, what: &str, expr: &str, limit: Duration) -> Value {
        let deadline = std::time::Instant::now() + limit;
        let script = format!("try {{ return ({expr}); }} catch (e) {{ return null; }}");
        loop {
            let v = self.exec(&script, vec![]).await;
            let truthy = match &v {
                Value::Null => false,
                Value::Bool(b) => *b,
                Value::Number(n) => n.as_f64() != Some(0.0),
                Value::String(s) => !s.is_empty(),
                _ => true,
            };
            if truthy {
                return v;
            }
            if std::time::Instant::now() > deadline {
                let shot = self.screenshot(&format!("failed-{}", slug(what))).await;
                panic!(
                    "timed out waiting for {what} ({expr}); screenshot {}",
                    shot.display()
                );
            }
            actix_rt::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The element matching `css` (waits for it).
    pub async fn find(&self, css: &str) -> String {
        self.wait(
            &format!("element {css}"),
            &format!("document.querySelector({})", json!(css)),
        )
        .await;
        let v = self
            .call(
                "POST",
                &self.s("/element"),
                Some(json!({"using": "css selector", "value": css})),
            )
            .await;
        v[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element {css}: {v}"))
            .to_string()
    }

    /// Clicks the element matching `css` (a real pointer click through WebDriver).
    /// The page may re-render the element between finding and clicking it; then the
    /// click is retried on the fresh element.
    pub async fn click(&self, css: &str) {
        for _ in 0..20 {
            let id = self.find(css).await;
            match self
                .try_call("POST", &self.s(&format!("/element/{id}/click")), None)
                .await
            {
                Ok(_) => return,
                Err(e) if e["error"] == "stale element reference" => continue,
                Err(e) => panic!("click {css}: {e}"),
            }
        }
        panic!("click {css}: the element kept being replaced");
    }

    /// Clicks the element matching `css` once, if it is there now; `Err` holds the
    /// driver's error (`no such element`, `stale element reference`, ...).
    pub async fn try_click(&self, css: &str) -> Result<(), Value> {
        let found = self
            .try_call(
                "POST",
                &self.s("/element"),
                Some(json!({"using": "css selector", "value": css})),
            )
            .await?;
        let id = found[ELEMENT].as_str().ok_or_else(|| found.clone())?;
        self.try_call("POST", &self.s(&format!("/element/{id}/click")), None)
            .await
            .map(|_| ())
    }

    /// Types into the element matching `css`. `\u{E007}` is Enter, `\u{E00C}` Escape.
    pub async fn type_into(&self, css: &str, text: &str) {
        let id = self.find(css).await;
        self.call(
            "POST",
            &self.s(&format!("/element/{id}/value")),
            Some(json!({"text": text})),
        )
        .await;
    }

    /// Presses `keys` together (a chord: all down, then all up in reverse) on whatever
    /// has focus; e.g. `"\u{E00A}\u{E015}"` is Alt+ArrowDown.
    pub async fn chord(&self, keys: &str) {
        let down = keys
            .chars()
            .map(|c| json!({"type": "keyDown", "value": c.to_string()}));
        let up = keys
            .chars()
            .rev()
            .map(|c| json!({"type": "keyUp", "value": c.to_string()}));
        let actions: Vec<Value> = down.chain(up).collect();
        self.call(
            "POST",
            &self.s("/actions"),
            Some(json!({"actions": [{"type": "key", "id": "kb", "actions": actions}]})),
        )
        .await;
        self.call("DELETE", &self.s("/actions"), None).await;
    }

    /// Types `text` into whatever has focus, key by key.
    pub async fn keys_text(&self, text: &str) {
        let actions: Vec<Value> = text
            .chars()
            .flat_map(|c| {
                [
                    json!({"type": "keyDown", "value": c.to_string()}),
                    json!({"type": "keyUp", "value": c.to_string()}),
                ]
            })
            .collect();
        self.call(
            "POST",
            &self.s("/actions"),
            Some(json!({"actions": [{"type": "key", "id": "kb", "actions": actions}]})),
        )
        .await;
    }

    /// Sets a permission for the page's origin as if the person had answered the
    /// browser's prompt (WebDriver's Set Permission), e.g. `("notifications",
    /// "granted")`.
    pub async fn set_permission(&self, name: &str, state: &str) {
        self.call(
            "POST",
            &self.s("/permissions"),
            Some(json!({"descriptor": {"name": name}, "state": state})),
        )
        .await;
    }

    /// Sends a DevTools protocol command to the page's target through chromedriver
    /// (`goog/cdp/execute`) and returns its result, e.g.
    /// `cdp("Page.getInstallabilityErrors", json!({}))`.
    pub async fn cdp(&self, method: &str, params: Value) -> Value {
        self.call(
            "POST",
            &self.s("/goog/cdp/execute"),
            Some(json!({"cmd": method, "params": params})),
        )
        .await
    }

    /// Resizes the window (CSS pixels).
    pub async fn resize(&self, width: u32, height: u32) {
        self.call(
            "POST",
            &self.s("/window/rect"),
            Some(json!({"width": width, "height": height})),
        )
        .await;
    }

    /// Saves a PNG screenshot as `target/screenshots/NAME.png` and returns its path.
    pub async fn screenshot(&self, name: &str) -> PathBuf {
        let v = self.call("GET", &self.s("/screenshot"), None).await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(v.as_str().unwrap_or_default())
            .unwrap_or_else(|e| panic!("screenshot is not base64: {e}"));
        let dir = target_dir().join("screenshots");
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
        path
    }

    /// Runs axe-core (from `.vendor-clis`) on the page and returns the violations of
    /// impact `serious` or `critical`.
    pub async fn axe_serious(&self) -> Vec<Value> {
        let path = require(vendor_clis::axe_js(), "axe-core");
        let src = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        self.exec(&format!("{src}\n;return typeof axe;"), vec![])
            .await;
        let result = self
            .exec_async(
                "const done = arguments[arguments.length - 1];\
                 axe.run(document, {resultTypes: ['violations']})\
                   .then(r => done(r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,\
                      nodes: v.nodes.slice(0, 5).map(n => n.target.join(' '))}))))\
                   .catch(e => done([{id: 'axe-error', impact: 'critical', help: String(e)}]));",
                vec![],
            )
            .await;
        result
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|v| v["impact"] == "serious" || v["impact"] == "critical")
            .collect()
    }
}

fn slug(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .take(60)
        .collect()
}

/// `CARGO_TARGET_DIR`, or the `target` folder above the running test executable.
pub fn target_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(dir);
    }
    let exe = std::env::current_exe().unwrap_or_default();
    exe.ancestors()
        .find(|p| p.file_name().is_some_and(|n| n == "target"))
        .map(Path::to_path_buf)
        .unwrap_or_else(|| repo_root().join("target"))
}

/// The repository root (this crate lives in `tests/`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

impl Drop for Browser {
    fn drop(&mut self) {
        // End the session synchronously (Drop cannot await): a raw HTTP DELETE.
        if !self.session.is_empty() {
            let addr = self.driver_url.trim_start_matches("http://").to_string();
            if let Ok(mut tcp) = TcpStream::connect(&addr) {
                let _ = tcp.set_read_timeout(Some(Duration::from_secs(10)));
                let req = format!(
                    "DELETE /session/{} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    self.session
                );
                if tcp.write_all(req.as_bytes()).is_ok() {
                    read_response(&mut tcp);
                }
            }
        }
        // chromedriver leads its own process group; end that group (ours alone).
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.driver.id())])
            .stderr(Stdio::null())
            .status();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// Reads one HTTP response (chromedriver answers after the browser has quit); stops at
/// the end of the body rather than waiting for the peer to close.
fn read_response(tcp: &mut TcpStream) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match tcp.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
        let text = String::from_utf8_lossy(&buf);
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse::<usize>().ok())
                        .flatten()
                })
                .unwrap_or(0);
            if buf.len() >= end + 4 + length {
                return;
            }
        }
    }
}
