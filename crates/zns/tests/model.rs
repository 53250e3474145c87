//! Property test: random command sequences against a plain model of the NVMe ZNS zone state
//! machine. After every command the device's result (success, or the kind of error) and
//! every zone's state, write pointer and data must match the model.

use proptest::prelude::*;
use zkv_zns::{
    FaultOp, FileDevice, Geometry, IoCategory, MemDevice, TearMode, ZoneOp, ZoneState, ZonedDevice,
};

const BLOCK: u64 = 4096;
const ZONES: u32 = 6;
const ZONE_BLOCKS: u64 = 4;
const CAP_BLOCKS: u64 = 3;

#[derive(Clone, Debug)]
enum Cmd {
    Write {
        zone: u32,
        skew: i8,
        blocks: u64,
    },
    Append {
        zone: u32,
        blocks: u64,
    },
    Zone {
        zone: u32,
        op: ZoneOp,
    },
    Read {
        zone: u32,
        block: u64,
        blocks: u64,
    },
    Sync,
    PowerCut,
    Restart,
    InjectWrite {
        zone: u32,
    },
    /// Close and reopen the image (file backend; a no-op for memory).
    Reopen,
}

fn cmd() -> impl Strategy<Value = Cmd> {
    let zone = 0..ZONES + 1; // one past the end tests the range check
    let op = prop_oneof![
        Just(ZoneOp::Open),
        Just(ZoneOp::Close),
        Just(ZoneOp::Finish),
        Just(ZoneOp::Reset)
    ];
    prop_oneof![
        6 => (zone.clone(), prop_oneof![4 => Just(0i8), 1 => -2i8..=2], 0..3u64)
            .prop_map(|(zone, skew, blocks)| Cmd::Write { zone, skew, blocks }),
        6 => (zone.clone(), 1..3u64).prop_map(|(zone, blocks)| Cmd::Append { zone, blocks }),
        6 => (zone.clone(), op).prop_map(|(zone, op)| Cmd::Zone { zone, op }),
        2 => (0..ZONES, 0..ZONE_BLOCKS, 1..3u64)
            .prop_map(|(zone, block, blocks)| Cmd::Read { zone, block, blocks }),
        1 => Just(Cmd::Sync),
        1 => Just(Cmd::PowerCut),
        1 => Just(Cmd::Restart),
        1 => (0..ZONES).prop_map(|zone| Cmd::InjectWrite { zone }),
        1 => Just(Cmd::Reopen),
    ]
}

/// The model: each zone's state, data (the blocks written), durable length and the time it
/// became implicitly open.
#[derive(Clone, Debug)]
struct MZone {
    state: ZoneState,
    data: Vec<u8>,
    durable: usize,
    since: u64,
}

struct Model {
    max_open: u32,
    max_active: u32,
    zones: Vec<MZone>,
    tick: u64,
    powered: bool,
    inject: Option<u32>,
}

type Outcome = Result<(), &'static str>;

impl Model {
    fn new(max_open: u32, max_active: u32) -> Model {
        let z = MZone {
            state: ZoneState::Empty,
            data: Vec::new(),
            durable: 0,
            since: 0,
        };
        Model {
            max_open,
            max_active,
            zones: vec![z; ZONES as usize],
            tick: 0,
            powered: true,
            inject: None,
        }
    }

    fn count(&self, f: fn(ZoneState) -> bool) -> u32 {
        self.zones.iter().filter(|z| f(z.state)).count() as u32
    }

    /// Can zone `z` (EMPTY or CLOSED) become open? Returns the zone to auto-close, if any.
    fn admit(&self, z: usize) -> Result<Option<usize>, &'static str> {
        let active = self.count(|s| {
            matches!(
                s,
                ZoneState::ImplicitOpen | ZoneState::ExplicitOpen | ZoneState::Closed
            )
        });
        let open = self.count(|s| matches!(s, ZoneState::ImplicitOpen | ZoneState::ExplicitOpen));
        if self.zones[z].state == ZoneState::Empty
            && self.max_active > 0
            && active >= self.max_active
        {
            return Err("too_many_active");
        }
        if self.max_open == 0 || open < self.max_open {
            return Ok(None);
        }
        (0..self.zones.len())
            .filter(|&i| self.zones[i].state == ZoneState::ImplicitOpen)
            .min_by_key(|&i| self.zones[i].since)
            .map(Some)
            .ok_or("too_many_open")
    }

    fn write(&mut self, zone: u32, off: Option<u64>, data: &[u8]) -> Outcome {
        if zone >= ZONES {
            return Err("no_such_zone");
        }
        if !self.powered {
            return Err("power_loss");
        }
        if self.inject == Some(zone) {
            self.inject = None;
            return Err("injected");
        }
        let z = zone as usize;
        let wp = self.zones[z].data.len() as u64;
        match self.zones[z].state {
            ZoneState::Full => return Err("zone_full"),
            ZoneState::Offline => return Err("offline"),
            ZoneState::ReadOnly => return Err("read_only"),
            _ => {}
        }
        if off.unwrap_or(wp) != wp {
            return Err("invalid_write_position");
        }
        if data.is_empty() {
            return Ok(());
        }
        if wp + data.len() as u64 > CAP_BLOCKS * BLOCK {
            return Err("boundary_crossed");
        }
        if !matches!(
            self.zones[z].state,
            ZoneState::ImplicitOpen | ZoneState::ExplicitOpen
        ) {
            if let Some(v) = self.admit(z)? {
                self.zones[v].state = ZoneState::Closed;
            }
            self.tick += 1;
            self.zones[z].state = ZoneState::ImplicitOpen;
            self.zones[z].since = self.tick;
        }
        self.zones[z].data.extend_from_slice(data);
        if self.zones[z].data.len() as u64 == CAP_BLOCKS * BLOCK {
            self.zones[z].state = ZoneState::Full;
        }
        Ok(())
    }

    fn zone_op(&mut self, zone: u32, op: ZoneOp) -> Outcome {
        use ZoneState::*;
        if zone >= ZONES {
            return Err("no_such_zone");
        }
        if !self.powered {
            return Err("power_loss");
        }
        let z = zone as usize;
        let state = self.zones[z].state;
        match (op, state) {
            (_, Offline) => return Err("offline"),
            (_, ReadOnly) => return Err("read_only"),
            (ZoneOp::Open, ExplicitOpen) | (ZoneOp::Close, Closed) | (ZoneOp::Finish, Full) => {}
            (ZoneOp::Open, ImplicitOpen) => self.zones[z].state = ExplicitOpen,
            (ZoneOp::Open, Empty | Closed) => {
                if let Some(v) = self.admit(z)? {
                    self.zones[v].state = Closed;
                }
                self.zones[z].state = ExplicitOpen;
            }
            (ZoneOp::Close, ImplicitOpen | ExplicitOpen) => self.zones[z].state = Closed,
            (ZoneOp::Finish, _) => {
                self.zones[z].state = Full;
                self.zones[z].durable = self.zones[z].data.len();
            }
            (ZoneOp::Reset, _) => {
                self.zones[z] = MZone {
                    state: Empty,
                    data: Vec::new(),
                    durable: 0,
                    since: 0,
                }
            }
            _ => return Err("invalid_transition"),
        }
        Ok(())
    }

    fn power_cut(&mut self) {
        if !self.powered {
            return;
        }
        for z in &mut self.zones {
            let lost = z.data.len() > z.durable;
            z.data.truncate(z.durable);
            z.state = match z.state {
                ZoneState::Full if !lost => ZoneState::Full,
                _ if z.data.is_empty() => ZoneState::Empty,
                _ => ZoneState::Closed,
            };
        }
        self.powered = false;
    }

    /// A process restart on a persistent device (the drive stays powered): every zone keeps
    /// its state and data. The order of implicit opens restarts at zone order.
    fn reopen(&mut self) {
        for (i, z) in self.zones.iter_mut().enumerate() {
            z.durable = z.data.len();
            z.since = i as u64;
        }
        self.tick = self.zones.len() as u64;
        self.powered = true;
        self.inject = None;
    }

    fn read(&self, zone: u32, block: u64, blocks: u64) -> Result<Vec<u8>, &'static str> {
        if !self.powered {
            return Err("power_loss");
        }
        let z = &self.zones[zone as usize];
        let start = (block * BLOCK) as usize;
        let len = (blocks * BLOCK).min((ZONE_BLOCKS - block) * BLOCK) as usize;
        Ok((start..start + len)
            .map(|i| z.data.get(i).copied().unwrap_or(0))
            .collect())
    }
}

fn kind<T>(r: zkv_zns::Result<T>) -> Result<T, &'static str> {
    r.map_err(|e| e.kind())
}

fn data_for(step: usize, blocks: u64) -> Vec<u8> {
    (0..blocks * BLOCK)
        .map(|i| (i as usize * 7 + step * 13) as u8)
        .collect()
}

fn run(max_open: u32, max_active: u32, cmds: Vec<Cmd>, file: bool) -> Result<(), TestCaseError> {
    let geo = Geometry::new(ZONES, ZONE_BLOCKS * BLOCK)
        .with_capacity(CAP_BLOCKS * BLOCK)
        .with_limits(max_open, max_active);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model.img");
    let mut dev: Box<dyn ZonedDevice> = if file {
        Box::new(FileDevice::create(&path, geo).unwrap())
    } else {
        Box::new(MemDevice::new(geo).unwrap())
    };
    let mut m = Model::new(max_open, max_active);
    for (step, c) in cmds.into_iter().enumerate() {
        let faults = dev.faults().unwrap();
        match c {
            Cmd::Write { zone, skew, blocks } => {
                let wp = if zone < ZONES {
                    m.zones[zone as usize].data.len() as i64
                } else {
                    0
                };
                let off = (wp + i64::from(skew) * BLOCK as i64)
                    .clamp(0, ((ZONE_BLOCKS - 1) * BLOCK) as i64) as u64;
                let addr = geo.zone_start(zone.min(ZONES)) + off;
                let data = data_for(step, blocks);
                let want = m.write(zone, Some(off), &data);
                prop_assert_eq!(
                    kind(dev.write(addr, &data, IoCategory::User)),
                    want,
                    "step {} {:?}",
                    step,
                    c
                );
            }
            Cmd::Append { zone, blocks } => {
                let data = data_for(step, blocks);
                let wp = if zone < ZONES {
                    m.zones[zone as usize].data.len() as u64
                } else {
                    0
                };
                let want = m
                    .write(zone, None, &data)
                    .map(|()| geo.zone_start(zone) + wp);
                prop_assert_eq!(
                    kind(dev.append(zone, &data, IoCategory::User)),
                    want,
                    "step {} {:?}",
                    step,
                    c
                );
            }
            Cmd::Zone { zone, op } => {
                let want = m.zone_op(zone, op);
                prop_assert_eq!(kind(dev.zone_op(zone, op)), want, "step {} {:?}", step, c);
            }
            Cmd::Read {
                zone,
                block,
                blocks,
            } => {
                let want = m.read(zone, block, blocks);
                let len = (blocks.min(ZONE_BLOCKS - block) * BLOCK) as usize;
                let mut buf = vec![0xEEu8; len];
                let got = kind(dev.read(
                    geo.zone_start(zone) + block * BLOCK,
                    &mut buf,
                    IoCategory::User,
                ))
                .map(|()| buf);
                prop_assert_eq!(got, want, "step {} {:?}", step, c);
            }
            Cmd::Sync => {
                let want: Outcome = if m.powered { Ok(()) } else { Err("power_loss") };
                if m.powered {
                    for z in &mut m.zones {
                        z.durable = z.data.len();
                    }
                }
                prop_assert_eq!(kind(dev.sync()), want, "step {} {:?}", step, c);
            }
            Cmd::PowerCut => {
                m.power_cut();
                faults.power_cut(TearMode::Drop);
            }
            Cmd::Restart => {
                m.powered = true;
                m.inject = None;
                faults.restart();
            }
            Cmd::InjectWrite { zone } => {
                m.inject = Some(zone);
                faults.inject_error(FaultOp::Write, Some(zone), 1);
            }
            Cmd::Reopen if file => {
                drop(dev);
                dev = Box::new(FileDevice::open(&path).unwrap());
                m.reopen();
            }
            Cmd::Reopen => {}
        }
        if m.powered {
            let report = dev.report_zones(0, ZONES).unwrap();
            for (z, r) in report.iter().enumerate() {
                let mz = &m.zones[z];
                let wp = if mz.state == ZoneState::Full {
                    geo.zone_size
                } else {
                    mz.data.len() as u64
                };
                prop_assert_eq!(
                    (r.state, r.wp - r.start),
                    (mz.state, wp),
                    "zone {} after step {} {:?}",
                    z,
                    step,
                    c
                );
            }
        }
    }
    Ok(())
}

fn limits() -> impl Strategy<Value = (u32, u32)> {
    prop_oneof![
        Just((0, 0)),
        (1..4u32).prop_map(|o| (o, o)),
        (1..4u32).prop_flat_map(|o| (Just(o), o + 1..=ZONES)),
        (1..4u32).prop_map(|o| (o, 0)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn device_matches_the_zone_state_model(
        (max_open, max_active) in limits(),
        cmds in proptest::collection::vec(cmd(), 1..80),
    ) {
        run(max_open, max_active, cmds, false)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn file_device_matches_the_zone_state_model(
        (max_open, max_active) in limits(),
        cmds in proptest::collection::vec(cmd(), 1..60),
    ) {
        run(max_open, max_active, cmds, true)?;
    }
}
