//! The cuObject DC token: 81 ASCII characters, seven colon-separated lowercase hex fields
//! (`addr:size:rkey:lid:dctn:gid_present:gid`), optionally followed by `:<addr>:<size>` (16 hex
//! digits each) that overrides the window, as PyTorch's checkpoint writer, NVIDIA's
//! multi-storage-client and nixl send.
//!
//! Parsing is strict: every field must have its exact width and only lowercase hex digits, so a
//! token either means exactly one window or is rejected with the field at fault.

use std::fmt;

/// Widths (hex digits) of the seven base fields, in order.
const FIELDS: [(&str, usize); 7] = [
    ("addr", 16),
    ("size", 8),
    ("rkey", 8),
    ("lid", 4),
    ("dctn", 6),
    ("gid_present", 1),
    ("gid", 32),
];

/// Length of the base token.
pub const BASE_LEN: usize = 81;
/// Length of a token with the `:addr:size` window suffix.
pub const EXTENDED_LEN: usize = BASE_LEN + 2 * 17;

/// Why a token was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("token has {0} characters; a DC token has {BASE_LEN}, or {EXTENDED_LEN} with a window suffix")]
    Length(usize),
    #[error("token has {0} colon-separated fields; expected 7, or 9 with a window suffix")]
    FieldCount(usize),
    #[error("token field {field} must be {width} hex digits, found {found}")]
    FieldWidth {
        field: &'static str,
        width: usize,
        found: usize,
    },
    #[error("token field {field} has a character that is not a lowercase hex digit")]
    NotHex { field: &'static str },
    #[error("token field gid_present must be 0 or 1")]
    GidFlag,
    #[error("token window is empty")]
    EmptyWindow,
    #[error("token window wraps around the address space")]
    WindowOverflow,
    #[error("software token: {0}")]
    Software(&'static str),
}

/// A window of the client's registered memory: `[addr, addr + len)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub addr: u64,
    pub len: u64,
}

impl Window {
    /// Whether `[offset, offset + n)` (relative to the window) lies inside it.
    pub fn contains(&self, offset: u64, n: u64) -> bool {
        offset.checked_add(n).is_some_and(|end| end <= self.len)
    }
}

/// A parsed cuObject DC descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DcToken {
    /// Start of the window in the client's address space.
    pub addr: u64,
    /// Window size in bytes.
    pub size: u32,
    /// Remote key of the registered region.
    pub rkey: u32,
    /// LID of the client's port (0 on RoCE).
    pub lid: u16,
    /// The client's DC target number (24 bits).
    pub dctn: u32,
    /// GID of the client's port, when present.
    pub gid: Option<[u8; 16]>,
    /// Window override from the `:addr:size` suffix.
    pub window_override: Option<Window>,
}

fn hex_field(s: &str, field: &'static str, width: usize) -> Result<u64, TokenError> {
    if s.len() != width {
        return Err(TokenError::FieldWidth {
            field,
            width,
            found: s.len(),
        });
    }
    if !s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return Err(TokenError::NotHex { field });
    }
    Ok(u64::from_str_radix(s, 16).expect("validated hex of at most 16 digits"))
}

impl DcToken {
    /// Parses a token header value.
    pub fn parse(s: &str) -> Result<Self, TokenError> {
        let s = s.trim();
        if s.len() != BASE_LEN && s.len() != EXTENDED_LEN {
            return Err(TokenError::Length(s.len()));
        }
        let parts: Vec<&str> = s.split(':').collect();
        if parts.len() != 7 && parts.len() != 9 {
            return Err(TokenError::FieldCount(parts.len()));
        }
        let mut v = [0u64; 6];
        for (i, (name, width)) in FIELDS[..6].iter().enumerate() {
            v[i] = hex_field(parts[i], name, *width)?;
        }
        let gid_text = parts[6];
        if gid_text.len() != 32 {
            return Err(TokenError::FieldWidth {
                field: "gid",
                width: 32,
                found: gid_text.len(),
            });
        }
        // Byte offsets below are character offsets only in ASCII (the fuzzer found the panic).
        if !gid_text.is_ascii() {
            return Err(TokenError::NotHex { field: "gid" });
        }
        let mut gid = [0u8; 16];
        for (i, byte) in gid.iter_mut().enumerate() {
            *byte = hex_field(&gid_text[2 * i..2 * i + 2], "gid", 2)? as u8;
        }
        let gid = match v[5] {
            0 => None,
            1 => Some(gid),
            _ => return Err(TokenError::GidFlag),
        };
        let window_override = if parts.len() == 9 {
            let addr = hex_field(parts[7], "window_addr", 16)?;
            let len = hex_field(parts[8], "window_size", 16)?;
            Some(Window { addr, len })
        } else {
            None
        };
        let t = DcToken {
            addr: v[0],
            size: v[1] as u32,
            rkey: v[2] as u32,
            lid: v[3] as u16,
            dctn: v[4] as u32,
            gid,
            window_override,
        };
        let w = t.window();
        if w.len == 0 {
            return Err(TokenError::EmptyWindow);
        }
        if w.addr.checked_add(w.len).is_none() {
            return Err(TokenError::WindowOverflow);
        }
        Ok(t)
    }

    /// The window the server may touch: the suffix override when present, else `addr`/`size`.
    pub fn window(&self) -> Window {
        self.window_override.unwrap_or(Window {
            addr: self.addr,
            len: u64::from(self.size),
        })
    }

    /// The IPv4 address when the GID is an IPv4-mapped IPv6 address (RoCE v2 over IPv4).
    pub fn ipv4(&self) -> Option<std::net::Ipv4Addr> {
        let g = self.gid?;
        (g[..10] == [0; 10] && g[10] == 0xff && g[11] == 0xff)
            .then(|| std::net::Ipv4Addr::new(g[12], g[13], g[14], g[15]))
    }
}

impl fmt::Display for DcToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:016x}:{:08x}:{:08x}:{:04x}:{:06x}:{}:",
            self.addr,
            self.size,
            self.rkey,
            self.lid,
            self.dctn & 0xff_ffff,
            u8::from(self.gid.is_some())
        )?;
        for b in self.gid.unwrap_or([0; 16]) {
            write!(f, "{b:02x}")?;
        }
        if let Some(w) = self.window_override {
            write!(f, ":{:016x}:{:016x}", w.addr, w.len)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SAMPLE: &str = "00007f3a2c000000:00100000:0001a2b3:0000:00c0de:1:00000000000000000000ffffc0a80a07";

    #[test]
    fn parses_a_roce_token() {
        assert_eq!(SAMPLE.len(), BASE_LEN);
        let t = DcToken::parse(SAMPLE).unwrap();
        assert_eq!(t.addr, 0x7f3a_2c00_0000);
        assert_eq!(t.size, 1 << 20);
        assert_eq!(t.rkey, 0x1a2b3);
        assert_eq!(t.lid, 0);
        assert_eq!(t.dctn, 0xc0de);
        assert_eq!(t.ipv4(), Some(std::net::Ipv4Addr::new(192, 168, 10, 7)));
        assert_eq!(
            t.window(),
            Window {
                addr: 0x7f3a_2c00_0000,
                len: 1 << 20
            }
        );
        assert_eq!(t.to_string(), SAMPLE);
    }

    #[test]
    fn suffix_overrides_the_window() {
        let s = format!("{SAMPLE}:00007f3a2c100000:0000000200000000");
        assert_eq!(s.len(), EXTENDED_LEN);
        let t = DcToken::parse(&s).unwrap();
        assert_eq!(
            t.window(),
            Window {
                addr: 0x7f3a_2c10_0000,
                len: 8 << 30
            }
        );
        assert_eq!(t.to_string(), s);
    }

    #[test]
    fn a_multibyte_character_in_the_gid_is_refused_not_a_panic() {
        let bad = SAMPLE.replace("ffffc0a80a07", "ffff\u{35e}a80a07");
        assert_eq!(bad.len(), SAMPLE.len());
        assert_eq!(DcToken::parse(&bad), Err(TokenError::NotHex { field: "gid" }));
    }

    #[test]
    fn rejects_malformed_tokens_precisely() {
        assert_eq!(DcToken::parse("abc"), Err(TokenError::Length(3)));
        let upper = SAMPLE.replace("c0de", "C0DE");
        assert_eq!(DcToken::parse(&upper), Err(TokenError::NotHex { field: "dctn" }));
        let flag = SAMPLE.replace(":1:", ":2:");
        assert_eq!(DcToken::parse(&flag), Err(TokenError::GidFlag));
        let shifted = SAMPLE.replacen("00007f3a2c000000:00100000", "00007f3a2c0000000:0100000", 1);
        assert!(matches!(
            DcToken::parse(&shifted),
            Err(TokenError::FieldWidth { field: "addr", .. })
        ));
        let empty = SAMPLE.replace(":00100000:", ":00000000:");
        assert_eq!(DcToken::parse(&empty), Err(TokenError::EmptyWindow));
        let wrap = format!("{SAMPLE}:ffffffffffffff00:0000000000001000");
        assert_eq!(DcToken::parse(&wrap), Err(TokenError::WindowOverflow));
        let colons = SAMPLE.replacen(':', "-", 1);
        assert!(DcToken::parse(&colons).is_err());
    }

    #[test]
    fn window_bounds() {
        let w = Window { addr: 100, len: 10 };
        assert!(w.contains(0, 10));
        assert!(w.contains(9, 1));
        assert!(!w.contains(9, 2));
        assert!(!w.contains(u64::MAX, 2));
    }

    fn any_token() -> impl Strategy<Value = DcToken> {
        (
            any::<u64>(),
            1u32..,
            any::<u32>(),
            any::<u16>(),
            0u32..0x100_0000,
            proptest::option::of(any::<[u8; 16]>()),
            proptest::option::of((0u64..u64::MAX / 2, 1u64..u64::MAX / 2)),
        )
            .prop_map(|(addr, size, rkey, lid, dctn, gid, ov)| DcToken {
                // Halved so that addr + size cannot wrap.
                addr: addr / 2,
                size,
                rkey,
                lid,
                dctn,
                gid,
                window_override: ov.map(|(a, l)| Window { addr: a, len: l }),
            })
    }

    proptest! {
        #[test]
        fn format_then_parse_is_identity(t in any_token()) {
            let s = t.to_string();
            prop_assert!(s.len() == BASE_LEN || s.len() == EXTENDED_LEN);
            prop_assert_eq!(DcToken::parse(&s).unwrap(), t);
        }

        #[test]
        fn parse_never_panics(s in "\\PC{0,130}") {
            let _ = DcToken::parse(&s);
        }

        #[test]
        fn single_character_damage_is_caught(t in any_token(), pos in 0usize..81, c in "[^0-9a-f:]") {
            let mut s = t.to_string().into_bytes();
            let c = c.as_bytes()[0];
            if c.is_ascii() {
                s[pos] = c;
                let s = String::from_utf8(s).unwrap();
                prop_assert!(DcToken::parse(&s).is_err());
            }
        }
    }
}
