//! A Web Push service stand-in (tests/python/push_service.py) for the tests: it
//! checks every push with implementations no one here wrote (py_vapid verifies the
//! VAPID token, http_ece decrypts the body with the device's private key) and reports
//! what it received.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::vendor_clis;

/// The running stand-in; killed when dropped.
pub struct PushService {
    child: Child,
    received: Receiver<Value>,
    /// The port it listens on, on 127.0.0.1.
    pub port: u16,
    devices: Vec<Value>,
}

impl Drop for PushService {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl PushService {
    /// Starts the stand-in with one device per name (see the script for how a name
    /// makes it answer).
    pub fn start(names: &[&str]) -> PushService {
        let script = vendor_clis::repo_root().join("tests/python/push_service.py");
        let mut child = Command::new(vendor_clis::python_path())
            .arg(script)
            .args(names)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("starting the push service stand-in: {e}"));
        let Some(stdout) = child.stdout.take() else {
            panic!("the stand-in has no stdout")
        };
        let (tx, received) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let Ok(value) = serde_json::from_str::<Value>(&line) else {
                    panic!("the stand-in printed {line}");
                };
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        let first = received
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|e| panic!("the stand-in's first line: {e}"));
        PushService {
            child,
            received,
            port: first["port"].as_u64().map_or(0, |p| p as u16),
            devices: first["devices"].as_array().cloned().unwrap_or_default(),
        }
    }

    /// The subscription body for device `name`, as a browser's toJSON() gives it.
    pub fn subscription(&self, name: &str) -> Value {
        let Some(device) = self.devices.iter().find(|d| d["name"] == name) else {
            panic!("no device {name} in the stand-in")
        };
        json!({
            "endpoint": format!("http://127.0.0.1:{}/push/{name}", self.port),
            "keys": {"p256dh": device["p256dh"], "auth": device["auth"]},
            "label": format!("{name}'s browser"),
        })
    }

    /// The next push the stand-in received, checked: no verification or decryption
    /// error.
    pub async fn next(&self) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match self.received.try_recv() {
                Ok(push) => {
                    assert!(
                        push.get("error").is_none(),
                        "the stand-in refused a push: {push}"
                    );
                    return push;
                }
                Err(_) if Instant::now() < deadline => {
                    actix_rt::time::sleep(Duration::from_millis(20)).await
                }
                Err(e) => panic!("no push within 30 s: {e}"),
            }
        }
    }

    /// The next push to device `name`; pushes to other devices meanwhile are
    /// returned too, in the order they came.
    pub async fn next_to(&self, name: &str, others: &mut Vec<Value>) -> Value {
        loop {
            let push = self.next().await;
            if push["device"] == name {
                return push;
            }
            others.push(push);
        }
    }
}
