//! Pairing a phone: the link's QR code (for the page and for a terminal) and the
//! address another device reaches this server at.

use std::net::IpAddr;

use qrcode::{Color, QrCode};
use tandem_protocol::devices::QrModules;

/// `text` as a QR code's modules (`1` dark), medium error correction.
pub fn qr(text: &str) -> Result<QrModules, qrcode::types::QrError> {
    let code = QrCode::new(text.as_bytes())?;
    let modules = code
        .to_colors()
        .into_iter()
        .map(|c| if c == Color::Dark { '1' } else { '0' })
        .collect();
    Ok(QrModules {
        size: code.width() as u32,
        modules,
    })
}

/// The QR code for a terminal: two modules a character (upper and lower half
/// blocks), black on white whatever the terminal's colours (a scanner wants dark on
/// light), with the 4-module quiet zone the standard asks for.
pub fn terminal(qr: &QrModules) -> String {
    const QUIET: i64 = 4;
    let size = qr.size as i64;
    let bytes = qr.modules.as_bytes();
    let dark = |x: i64, y: i64| {
        (0..size).contains(&x) && (0..size).contains(&y) && bytes[(y * size + x) as usize] == b'1'
    };
    let mut out = String::new();
    let mut y = -QUIET;
    while y < size + QUIET {
        // White background, black foreground.
        out.push_str("\x1b[47;30m");
        for x in -QUIET..size + QUIET {
            out.push(match (dark(x, y), dark(x, y + 1)) {
                (true, true) => '█',
                (true, false) => '▀',
                (false, true) => '▄',
                (false, false) => ' ',
            });
        }
        out.push_str("\x1b[0m\n");
        y += 2;
    }
    out
}

/// Where another device reaches a server listening on `bind`:`port`: the URL with
/// that address, or for an unspecified one (`0.0.0.0`, `::`) this machine's first
/// address that is not loopback (IPv4 first: phones scan those most reliably), and
/// whether the address is not loopback (else no other device reaches it).
pub fn public_url(scheme: &str, bind: IpAddr, port: u16) -> (String, bool) {
    let ip = if bind.is_unspecified() {
        let mut addrs: Vec<IpAddr> = if_addrs::get_if_addrs()
            .map(|all| all.into_iter().map(|i| i.ip()).collect())
            .unwrap_or_default();
        addrs.retain(|ip| !ip.is_loopback() && !is_link_local(ip));
        addrs.sort_by_key(|ip| !ip.is_ipv4());
        addrs
            .into_iter()
            .next()
            .unwrap_or(IpAddr::from([127, 0, 0, 1]))
    } else {
        bind
    };
    let url = match ip {
        IpAddr::V6(v6) => format!("{scheme}://[{v6}]:{port}"),
        IpAddr::V4(v4) => format!("{scheme}://{v4}:{port}"),
    };
    (url, !ip.is_loopback())
}

/// A link-local address (169.254/16, fe80::/10) needs a zone or never leaves the
/// link: no use in a link for a phone.
fn is_link_local(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_link_local(),
        IpAddr::V6(v6) => (v6.segments()[0] & 0xffc0) == 0xfe80,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_becomes_a_square_code_and_terminal_art() {
        let code = qr("https://192.168.1.20:7420/#/pair/0123456789abcdef0123456789abcdef").unwrap();
        assert_eq!(code.modules.len(), (code.size * code.size) as usize);
        assert!(code.size >= 21 && code.size % 4 == 1, "{}", code.size);
        // The finder pattern's corner.
        assert!(code.modules.starts_with("1111111"));
        let art = terminal(&code);
        let rows = art.lines().count() as u32;
        assert_eq!(rows, (code.size + 8).div_ceil(2));
        assert!(art
            .lines()
            .all(|l| l.starts_with("\x1b[47;30m") && l.ends_with("\x1b[0m")));
    }

    #[test]
    fn a_specific_address_is_used_as_it_is() {
        assert_eq!(
            public_url("https", IpAddr::from([10, 0, 0, 5]), 7420),
            ("https://10.0.0.5:7420".to_string(), true)
        );
        assert_eq!(
            public_url("http", "::1".parse().unwrap(), 1),
            ("http://[::1]:1".to_string(), false)
        );
        let (any, _) = public_url("https", IpAddr::from([0, 0, 0, 0]), 7420);
        assert!(
            any.starts_with("https://") && !any.contains("0.0.0.0"),
            "{any}"
        );
    }
}
