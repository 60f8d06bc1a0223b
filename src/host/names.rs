//! Tool names as a provider's API accepts them (`^[a-zA-Z0-9_-]{1,MAX}$`), unique per request,
//! and the way back to the MCP tool names; `MAX` is the provider's length limit.

use std::collections::HashMap;

/// MCP tool names ↔ wire names matching `^[a-zA-Z0-9_-]{1,MAX}$`, unique per request.
#[derive(Debug, Default)]
pub(crate) struct WireNames<const MAX: usize> {
    to_wire: HashMap<String, String>,
    from_wire: HashMap<String, String>,
}

impl<const MAX: usize> WireNames<MAX> {
    pub fn new<'a>(names: impl IntoIterator<Item = &'a str>) -> Self {
        let mut map = Self {
            to_wire: HashMap::new(),
            from_wire: HashMap::new(),
        };
        for name in names {
            if map.to_wire.contains_key(name) {
                continue;
            }
            let mut wire = sanitize::<MAX>(name);
            if map.from_wire.contains_key(&wire) {
                wire = hashed::<MAX>(&wire, name, 0);
            }
            let mut k = 1;
            while map.from_wire.contains_key(&wire) {
                wire = hashed::<MAX>(&wire, name, k);
                k += 1;
            }
            map.to_wire.insert(name.to_owned(), wire.clone());
            map.from_wire.insert(wire, name.to_owned());
        }
        map
    }

    /// The name sent for a tool (names never registered are sanitized on the fly).
    pub fn wire(&self, name: &str) -> String {
        self.to_wire
            .get(name)
            .cloned()
            .unwrap_or_else(|| sanitize::<MAX>(name))
    }

    /// The tool name for a name the model called (unknown names pass through).
    pub fn original(&self, wire: &str) -> String {
        self.from_wire
            .get(wire)
            .cloned()
            .unwrap_or_else(|| wire.to_owned())
    }
}

/// Every character outside `[a-zA-Z0-9_-]` becomes `_`.
pub(crate) fn clean(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn sanitize<const MAX: usize>(name: &str) -> String {
    let clean = clean(name);
    match clean.len() {
        0 => "tool".to_owned(),
        n if n > MAX => hashed::<MAX>(&clean, name, 0),
        _ => clean,
    }
}

/// `prefix_<8 hex>` within `MAX` characters, the hash taken over the original name (and a
/// counter).
fn hashed<const MAX: usize>(clean: &str, original: &str, k: u64) -> String {
    let hash = xxhash_rust::xxh3::xxh3_64_with_seed(original.as_bytes(), k) as u32;
    let keep = clean.len().min(MAX - 9);
    format!("{}_{hash:08x}", &clean[..keep])
}
