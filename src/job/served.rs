//! The files a server spec serves through mcpeval's own `serve` (an overlay, a cassette), read
//! before the server starts: a mistake in them is the user's (exit 2, `FILE:LINE`), not a server
//! that would not start (exit 3).

use crate::config::{InvalidSetting, ServerSpec};

/// Reads each overlay file and cassette `spec` serves; the first that does not read is an
/// invalid setting naming the server and the file's own message (`FILE:LINE: …`).
pub fn read_served_files(spec: &ServerSpec) -> Result<(), InvalidSetting> {
    for (kind, path) in spec.served_files() {
        let read = match kind {
            "overlay" => crate::mcp::proxy::Overlay::read(path)
                .map(|_| ())
                .map_err(|e| e.to_string()),
            _ => crate::cassette::Cassette::read(path)
                .map(|_| ())
                .map_err(|e| e.to_string()),
        };
        if let Err(why) = read {
            return Err(InvalidSetting(format!("server `{}`: {why}", spec.name)));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_overlay_or_cassette_is_refused_before_the_server_starts() {
        let dir = tempfile::tempdir().unwrap();
        let overlay = dir.path().join("w.yaml");
        std::fs::write(&overlay, "overlay: 1\ntools:\n  x: {descripton: typo}\n").unwrap();
        let spec = ServerSpec::parse(
            "candidate",
            &format!("overlay:{}+demo:1.4.0", overlay.display()),
        )
        .unwrap();
        let why = read_served_files(&spec).unwrap_err().0;
        assert!(why.starts_with("server `candidate`: "), "{why}");
        assert!(why.contains(&format!("{}:3", overlay.display())), "{why}");
        let cassette = dir.path().join("c.cassette.jsonl");
        std::fs::write(&cassette, "{\"mcpevalCassette\": 99}\n").unwrap();
        let spec = ServerSpec::parse(
            "baseline",
            &format!("replay:{}+demo:1.4.0", cassette.display()),
        )
        .unwrap();
        let why = read_served_files(&spec).unwrap_err().0;
        assert!(why.contains(&format!("{}:1", cassette.display())), "{why}");
        std::fs::write(&overlay, "overlay: 1\n").unwrap();
        let fine = format!("overlay:{}+demo:1.4.0", overlay.display());
        assert!(read_served_files(&ServerSpec::parse("c", &fine).unwrap()).is_ok());
        // A server of the user's own with a `serve --overlay` of its own is not read.
        let other = ServerSpec::parse("c", "node serve --overlay missing.yaml").unwrap();
        assert!(read_served_files(&other).is_ok());
    }
}
