//! A file policy and a blob policy side by side: blob files go to the blob policy, every
//! other file (SSTs, WALs, the manifest, cleaner copies of them) to the file policy.
//!
//! Each side sees only its own zones and the empty ones, so neither ever places a file in
//! the other's zones. The sides are told apart by the zone class: the high bit
//! ([`BLOB_ZONE`]) marks a blob zone. The blob policy sees its classes without that bit,
//! the file policy never gets a zone with it, and a class the file policy chooses loses it
//! (the file policies' classes are below 32), so the two class spaces cannot collide.
//!
//! A blob zone's policy bytes belong to the file layer once the zone is full: they hold the
//! zone's YBIZ, the youngest blob file number written into it ([`ybiz_of`]). A full zone
//! is never a placement target, so a blob policy loses nothing it could still use.

use crate::meta::FileKind;

use super::liza::cheapest_to_finish;
use super::{Decision, PlacementCtx, PlacementHint, PlacementPolicy, ZoneUse, ZoneView};

/// The class bit of the zones the blob policy opened.
pub const BLOB_ZONE: u8 = 0x80;

/// Whether a zone of this class is a blob zone (opened by a blob policy).
pub fn is_blob_zone(class: u8) -> bool {
    class & BLOB_ZONE != 0
}

/// The YBIZ of a zone: its policy bytes when it is a blob zone holding one (8 bytes, little
/// endian), `None` otherwise.
pub fn ybiz_of(class: u8, policy: &[u8]) -> Option<u64> {
    let bytes: [u8; 8] = policy.try_into().ok()?;
    is_blob_zone(class).then(|| u64::from_le_bytes(bytes))
}

/// The policy bytes recording `ybiz` for a blob zone.
pub fn ybiz_policy(ybiz: u64) -> Vec<u8> {
    ybiz.to_le_bytes().to_vec()
}

/// The names of the combinations [`policy_by_name`](super::policy_by_name) builds, so that
/// [`PlacementPolicy::name`] can return them (a test for each pair of known names keeps
/// the list complete).
const NAMES: &[&str] = &[
    "liza/baza",
    "caza/baza",
    "caza+/baza",
    "prophet/baza",
    "prophet-gc/baza",
    "prophet-gc-no/baza",
];

/// Blob files by `blobs`, everything else by `files`.
pub struct BlobSplit {
    name: &'static str,
    files: Box<dyn PlacementPolicy>,
    blobs: Box<dyn PlacementPolicy>,
}

impl BlobSplit {
    /// The combination of two policies; its name is `FILES/BLOBS` for policies known by
    /// name, `split` for others (tests).
    pub fn new(files: Box<dyn PlacementPolicy>, blobs: Box<dyn PlacementPolicy>) -> BlobSplit {
        let wanted = format!("{}/{}", files.name(), blobs.name());
        let name = NAMES.iter().find(|n| **n == wanted).copied();
        BlobSplit {
            name: name.unwrap_or("split"),
            files,
            blobs,
        }
    }

    fn side(&self, blob: bool) -> &dyn PlacementPolicy {
        if blob {
            self.blobs.as_ref()
        } else {
            self.files.as_ref()
        }
    }
}

fn is_blob(hint: &PlacementHint) -> bool {
    hint.kind == Some(FileKind::Blob)
}

/// The zone as one side sees it: its own zones (the blob side without the class bit) and
/// the empty ones; `None` for the other side's zones.
fn side_view(z: &ZoneView, blob: bool) -> Option<ZoneView> {
    if z.state == ZoneUse::Empty {
        return Some(z.clone());
    }
    (is_blob_zone(z.class) == blob).then(|| ZoneView {
        class: z.class & !BLOB_ZONE,
        ..z.clone()
    })
}

/// A class of one side as the zone records it.
fn tagged(class: u8, blob: bool) -> u8 {
    if blob {
        class | BLOB_ZONE
    } else {
        class & !BLOB_ZONE
    }
}

impl PlacementPolicy for BlobSplit {
    fn name(&self) -> &'static str {
        self.name
    }

    fn place(&self, ctx: &PlacementCtx<'_>) -> Decision {
        let blob = is_blob(ctx.hint);
        let zones: Vec<ZoneView> = ctx
            .zones
            .iter()
            .filter_map(|z| side_view(z, blob))
            .collect();
        let side_ctx = PlacementCtx {
            zones: &zones,
            ..*ctx
        };
        match self.side(blob).place(&side_ctx) {
            Decision::Use(zone) => Decision::Use(zone),
            Decision::OpenEmpty {
                class,
                policy,
                finish,
            } => Decision::OpenEmpty {
                class: tagged(class, blob),
                policy,
                // A side without an idle active zone of its own cannot free an active
                // resource: finish the other side's cheapest one, as LIZA would.
                finish: finish.or_else(|| {
                    if ctx.can_open {
                        None
                    } else {
                        cheapest_to_finish(ctx.zones)
                    }
                }),
            },
        }
    }

    fn wants_neighbors(&self) -> bool {
        self.files.wants_neighbors() || self.blobs.wants_neighbors()
    }

    fn wants_prediction(&self) -> bool {
        self.files.wants_prediction() || self.blobs.wants_prediction()
    }

    fn fallback_class(&self, hint: &PlacementHint) -> u8 {
        let blob = is_blob(hint);
        tagged(self.side(blob).fallback_class(hint), blob)
    }

    /// The allocator's first fallback keeps blob data out of the file policy's zones and
    /// other data out of blob zones; only when nothing else is left does it put data in a
    /// zone of the other side (space beats keeping kinds apart: docs/PLACEMENT.md).
    fn may_share(&self, hint: &PlacementHint, class: u8) -> bool {
        is_blob_zone(class) == is_blob(hint)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::key_range::test_util::{active, ctx, empty, full};
    use crate::placement::{
        blob_policy_names, policy_by_name, policy_names, Baza, Lifetime, Liza, DEFAULT_BLOB_POLICY,
    };

    fn split() -> BlobSplit {
        BlobSplit::new(Box::new(Liza), Box::new(Baza))
    }

    fn blob_hint(number: u64) -> PlacementHint {
        PlacementHint {
            kind: Some(FileKind::Blob),
            lifetime: Lifetime::Medium,
            blob_file: Some(number),
            ..Default::default()
        }
    }

    fn sst_hint() -> PlacementHint {
        PlacementHint {
            kind: Some(FileKind::Sst),
            lifetime: Lifetime::Medium,
            ..Default::default()
        }
    }

    fn blob_zone(zone: u32, remaining: u64, first_blob: u64) -> ZoneView {
        ZoneView {
            class: BLOB_ZONE | 1,
            first_blob: Some(first_blob),
            ..active(zone, remaining)
        }
    }

    #[test]
    fn blob_files_go_to_blob_zones_and_the_rest_never_does() {
        // Zone 3 holds SSTs (class Long), zone 4 blob files.
        let zones = [active(3, 1 << 20), blob_zone(4, 1 << 20, 7)];
        let s = split();
        assert_eq!(s.place(&ctx(&blob_hint(9), &zones, true)), Decision::Use(4));
        // LIZA would take zone 4 (a longer class, diff 1) if it saw it; it sees zone 3 only.
        let sst = s.place(&ctx(&sst_hint(), &zones, true));
        assert_eq!(sst, Decision::Use(3));
        let wal = PlacementHint {
            kind: Some(FileKind::Wal),
            lifetime: Lifetime::Short,
            ..Default::default()
        };
        assert_ne!(s.place(&ctx(&wal, &zones, false)), Decision::Use(4));
    }

    #[test]
    fn each_side_opens_zones_of_its_own_class() {
        let zones = [active(3, 1 << 20), empty(5, 1 << 20)];
        let s = split();
        let Decision::OpenEmpty { class, .. } = s.place(&ctx(&blob_hint(1), &zones, true)) else {
            panic!("a blob file without a blob zone opens one");
        };
        assert!(is_blob_zone(class));
        let medium = [
            active(3, 1 << 20),
            blob_zone(4, 1 << 20, 1),
            empty(5, 1 << 20),
        ];
        match s.place(&ctx(&sst_hint(), &medium, true)) {
            Decision::Use(3) => {}
            Decision::OpenEmpty { class, .. } => assert!(!is_blob_zone(class)),
            d => panic!("an SST decided {d:?}"),
        }
        assert!(is_blob_zone(s.fallback_class(&blob_hint(1))));
        assert_eq!(s.fallback_class(&sst_hint()), Lifetime::Medium.code());
    }

    #[test]
    fn a_side_without_a_zone_to_finish_finishes_the_other_sides() {
        // No free active resource; the only idle active zone holds SSTs.
        let zones = [active(3, 100), full(4), empty(5, 1 << 20)];
        let d = split().place(&ctx(&blob_hint(1), &zones, false));
        assert!(
            matches!(d, Decision::OpenEmpty { finish: Some(3), class, .. } if is_blob_zone(class)),
            "{d:?}"
        );
    }

    #[test]
    fn ybiz_lives_in_the_policy_bytes_of_blob_zones_only() {
        let bytes = ybiz_policy(42);
        assert_eq!(ybiz_of(BLOB_ZONE | 1, &bytes), Some(42));
        assert_eq!(ybiz_of(Lifetime::Long.code(), &bytes), None);
        assert_eq!(ybiz_of(BLOB_ZONE | 1, &[]), None);
    }

    #[test]
    fn every_combination_has_its_name() {
        for files in policy_names() {
            for blobs in blob_policy_names()
                .into_iter()
                .filter(|b| *b != DEFAULT_BLOB_POLICY)
            {
                let name = format!("{files}/{blobs}");
                let p = policy_by_name(&name);
                assert_eq!(p.map(|p| p.name()).ok(), Some(name.as_str()));
            }
        }
        let err = policy_by_name("liza/nope").err().unwrap_or_default();
        assert!(err.contains("unknown blob placement 'nope'"), "{err}");
        let err = policy_by_name("nope/baza").err().unwrap_or_default();
        assert!(err.contains("unknown placement policy 'nope'"), "{err}");
        let p = policy_by_name("caza+/baza").ok();
        assert!(p.is_some_and(|p| p.wants_neighbors()));
    }
}
