//! The host's randomness: every random byte the native host uses (mutex tokens, holder names, temp file
//! names, backoff jitter) comes from the operating system through `getrandom`. There is no fallback: when
//! the OS gives no random bytes the operation fails with `RANDOM_UNAVAILABLE`, because a token made from
//! the time and the pid could repeat another process's and weaken the dir store's mutex.

use crate::error::HostError;

/// `n` random bytes from the OS, or `RANDOM_UNAVAILABLE`.
pub fn bytes(n: usize) -> Result<Vec<u8>, HostError> {
    let mut buf = vec![0u8; n];
    getrandom::fill(&mut buf).map_err(|e| {
        HostError::new(
            "RANDOM_UNAVAILABLE",
            format!(
                "The operating system gave no random bytes ({e}); baton makes no token without them. Check that \
                 this process may use the getrandom system call or read /dev/urandom (a sandbox or seccomp \
                 profile may forbid it)."
            ),
        )
    })?;
    Ok(buf)
}

/// `n` random bytes from the OS as lowercase hex (`2n` digits), or `RANDOM_UNAVAILABLE`.
pub fn hex(n: usize) -> Result<String, HostError> {
    Ok(bytes(n)?.iter().map(|b| format!("{b:02x}")).collect())
}

/// A uniform random number in `[0, 1)` (53 random bits), or `RANDOM_UNAVAILABLE`.
pub fn unit() -> Result<f64, HostError> {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes(8)?);
    Ok((u64::from_le_bytes(word) >> 11) as f64 / (1u64 << 53) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_has_two_digits_per_byte_and_differs_between_calls() {
        let (a, b) = (hex(16).unwrap(), hex(16).unwrap());
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_ne!(a, b);
    }

    #[test]
    fn unit_is_in_range() {
        for _ in 0..1000 {
            let u = unit().unwrap();
            assert!((0.0..1.0).contains(&u), "{u}");
        }
    }
}
