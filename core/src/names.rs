//! Encoding of environment and scope names into store paths and git ref segments.
//!
//! Both encodings are injective over valid names (see [`crate::scope::validate_name`]) and can never
//! produce a path that leaves the store: a name that would be special (`.`, `..`, hidden, `x.lock`, ...)
//! is written as `=` followed by the lowercase hex of its UTF-8 bytes, and `=` never occurs in a valid name.

/// The SHA-256 digest of `data` as lowercase hex (64 digits), for names derived from other names: long
/// scope names, parent-object cells, git clone folders, mutex break markers.
pub fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(data))
}

/// The directory name of `name` in a dir store. Valid names map to themselves (the original layout),
/// except the empty name, `.`, `..` and names starting with `.`, which are `=hex`-encoded.
pub fn path_segment(name: &str) -> String {
    if path_needs_hex(name) { hex_segment(name) } else { name.to_owned() }
}

fn path_needs_hex(name: &str) -> bool {
    name.is_empty() || name.starts_with('.') || name.contains('/') || name.contains('\\')
}

/// The git ref segment of `name`: the original `refSeg` rule. Empty, leading or trailing `.`, a trailing
/// `.lock` or any `..` are `=hex`-encoded; everything else maps to itself.
pub fn ref_segment(name: &str) -> String {
    if ref_needs_hex(name) { hex_segment(name) } else { name.to_owned() }
}

fn ref_needs_hex(name: &str) -> bool {
    name.is_empty()
        || name.starts_with('.')
        || name.ends_with('.')
        || name.ends_with(".lock")
        || name.contains("..")
        || !name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// The length in bytes of the longer of `name`'s [`path_segment`] and [`ref_segment`], without making
/// either.
pub fn longest_segment_len(name: &str) -> usize {
    if path_needs_hex(name) || ref_needs_hex(name) { 1 + 2 * name.len() } else { name.len() }
}

/// Decodes a segment made by [`path_segment`] or [`ref_segment`]; `None` if it is not a valid encoding.
pub fn decode_segment(seg: &str) -> Option<String> {
    let Some(hex) = seg.strip_prefix('=') else {
        return Some(seg.to_owned());
    };
    if hex.len() % 2 != 0 {
        return None;
    }
    let bytes: Option<Vec<u8>> =
        (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok()).collect();
    String::from_utf8(bytes?).ok()
}

fn hex_segment(name: &str) -> String {
    format!("={}", hex::encode(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_segment_len_is_that_of_the_segments() {
        for name in
            ["", ".", "..", "a", "pr-1", ".hidden", "x.lock", "a..b", "trail.", "a/b", "a\\b", "é", "branch-feat-x"]
        {
            let made = path_segment(name).len().max(ref_segment(name).len());
            assert_eq!(longest_segment_len(name), made, "{name:?}");
        }
        assert_eq!(path_segment(".x"), "=2e78");
    }

    #[test]
    fn sha256_hex_matches_the_fips_vectors() {
        assert_eq!(sha256_hex(b""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(
            sha256_hex(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
    }

    #[test]
    fn plain_names_are_kept_and_special_ones_encoded() {
        assert_eq!(path_segment("pr-42"), "pr-42");
        assert_eq!(path_segment(".."), "=2e2e");
        assert_eq!(path_segment(".hidden"), "=2e68696464656e");
        assert_eq!(ref_segment("x.lock"), "=782e6c6f636b");
        assert_eq!(ref_segment("trailing."), "=747261696c696e672e");
        assert_eq!(ref_segment("a..b"), "=612e2e62");
        assert_eq!(ref_segment("branch-feat-x"), "branch-feat-x");
    }

    #[test]
    fn encodings_round_trip() {
        for n in ["pr-1", "..", ".", "", "x.lock", "a..b", ".hidden", "Feature"] {
            assert_eq!(decode_segment(&path_segment(n)).as_deref(), Some(n));
            assert_eq!(decode_segment(&ref_segment(n)).as_deref(), Some(n));
        }
    }
}
