//! Sign-in throttle: slows password guessing per user name and per client address, without
//! ever locking the real user out for more than a short delay.
//!
//! - A user name gets `free_failures` failed attempts; after that each attempt waits a delay
//!   that doubles per further failure, capped at `max_delay`. Failures older than `window` are
//!   forgotten; a success clears the name. A stranger can make the real user wait at most
//!   `max_delay` between attempts, never longer.
//! - A client address (an IPv6 address by its /64, which one client usually has whole) gets
//!   `address_failures` failed attempts per `address_window`, over all names, so one client
//!   cannot spread guesses over many names.
//!
//! Every attempt counts as failed from the moment it is let through until it succeeds, so
//! parallel attempts cannot all pass while the first password checks run. Both maps are bounded
//! (`max_keys`): a flood of random names or addresses evicts the stalest entries, never grows
//! memory. Names are kept as keyed hashes, so a huge name costs no memory either.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::domain::policy::loggable;
use crate::error::AppError;

/// How many attempts are free and how long the waits are.
#[derive(Clone, Debug)]
pub struct Policy {
    pub free_failures: u32,
    pub window: Duration,
    pub first_delay: Duration,
    pub max_delay: Duration,
    pub address_failures: u32,
    pub address_window: Duration,
    pub max_keys: usize,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            free_failures: 5,
            window: Duration::from_secs(15 * 60),
            first_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(30),
            address_failures: 20,
            address_window: Duration::from_secs(60),
            max_keys: 10_000,
        }
    }
}

struct NameState {
    failures: u32,
    last: Instant,
    wait_until: Instant,
}

struct AddressState {
    failures: u32,
    since: Instant,
}

struct State {
    names: HashMap<u64, NameState>,
    addresses: HashMap<IpAddr, AddressState>,
}

/// The sign-in throttle of one server (shared by its requests; cheap to clone).
#[derive(Clone)]
pub struct SignInThrottle {
    policy: Arc<Policy>,
    hasher: RandomState,
    state: Arc<Mutex<State>>,
}

impl Default for SignInThrottle {
    fn default() -> Self {
        SignInThrottle::new(Policy::default())
    }
}

/// An attempt let through: it stays counted as failed unless `succeeded` is called.
pub struct Attempt {
    throttle: SignInThrottle,
    name: u64,
    address: Option<IpAddr>,
}

impl Attempt {
    /// The password was right: the name's failures are forgotten, the address gets its try back.
    pub fn succeeded(self) {
        let mut state = self.throttle.lock();
        state.names.remove(&self.name);
        if let Some(entry) = self.address.and_then(|a| state.addresses.get_mut(&a)) {
            entry.failures = entry.failures.saturating_sub(1);
        }
    }
}

impl SignInThrottle {
    pub fn new(policy: Policy) -> SignInThrottle {
        let state = State { names: HashMap::new(), addresses: HashMap::new() };
        SignInThrottle { policy: Arc::new(policy), hasher: RandomState::new(), state: Arc::new(Mutex::new(state)) }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // NB: the maps stay consistent whatever panicked while holding the lock.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Lets an attempt for `name` from `address` through (counting it as failed), or says how
    /// long it must wait.
    pub fn begin(&self, name: &str, address: Option<IpAddr>, now: Instant) -> Result<Attempt, Duration> {
        let policy = &*self.policy;
        let key = self.hasher.hash_one(name.trim().to_lowercase());
        let address = address.map(address_key);
        let mut state = self.lock();
        let name_entry = state.names.get(&key).filter(|e| now.saturating_duration_since(e.last) < policy.window);
        if let Some(e) = name_entry.filter(|e| e.wait_until > now) {
            return Err(e.wait_until - now);
        }
        let address_entry = address
            .and_then(|a| state.addresses.get(&a))
            .filter(|e| now.saturating_duration_since(e.since) < policy.address_window);
        if let Some(e) = address_entry.filter(|e| e.failures >= policy.address_failures) {
            return Err((e.since + policy.address_window).saturating_duration_since(now));
        }

        if !state.names.contains_key(&key) {
            make_room(&mut state.names, policy.max_keys, |e| e.last, |e| live_name(e, policy, now));
        }
        let entry = state.names.entry(key).or_insert(NameState { failures: 0, last: now, wait_until: now });
        if now.saturating_duration_since(entry.last) >= policy.window {
            entry.failures = 0;
        }
        entry.failures += 1;
        entry.last = now;
        if let Some(extra) = entry.failures.checked_sub(policy.free_failures) {
            let delay = policy.first_delay.saturating_mul(1u32.checked_shl(extra).unwrap_or(u32::MAX));
            entry.wait_until = now + delay.min(policy.max_delay);
            if extra == 0 {
                tracing::warn!(user = %loggable(name), "sign-in attempts for this name are slowed down");
            }
        }
        if let Some(address) = address {
            if !state.addresses.contains_key(&address) {
                make_room(
                    &mut state.addresses,
                    policy.max_keys,
                    |e| e.since,
                    |e| now.saturating_duration_since(e.since) < policy.address_window,
                );
            }
            let entry = state.addresses.entry(address).or_insert(AddressState { failures: 0, since: now });
            if now.saturating_duration_since(entry.since) >= policy.address_window {
                *entry = AddressState { failures: 0, since: now };
            }
            entry.failures += 1;
            if entry.failures == policy.address_failures {
                tracing::warn!(client = %address, "sign-in attempts from this address are slowed down");
            }
        }
        Ok(Attempt { throttle: self.clone(), name: key, address })
    }
}

/// Whether a name's entry still matters: failures within the window, or a wait under way.
fn live_name(entry: &NameState, policy: &Policy, now: Instant) -> bool {
    now.saturating_duration_since(entry.last) < policy.window || entry.wait_until > now
}

/// Makes room for one more key: drops the entries that no longer matter, then, while still
/// full, the stalest one.
fn make_room<K: Clone + Eq + std::hash::Hash, V>(
    map: &mut HashMap<K, V>,
    max: usize,
    age: impl Fn(&V) -> Instant,
    live: impl Fn(&V) -> bool,
) {
    if map.len() < max {
        return;
    }
    map.retain(|_, v| live(v));
    while map.len() >= max.max(1) {
        let Some(oldest) = map.iter().min_by_key(|(_, v)| age(v)).map(|(k, _)| k.clone()) else {
            return;
        };
        map.remove(&oldest);
    }
}

/// The key of a client address: IPv4 as is, IPv6 by its /64.
fn address_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let s = v6.segments();
            IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
        }
        v4 => v4,
    }
}

/// The message of a refused attempt.
pub fn too_many(wait: Duration) -> AppError {
    let seconds = wait.as_millis().div_ceil(1000).max(1);
    AppError::TooMany { field: "password".into(), message: crate::tf!("errors.too_many_sign_ins", seconds = seconds) }
}

/// Lets the sign-in request being served through, or refuses it with 429 and how long to wait.
/// The throttle is the router's (an `Extension`), the address the connection's peer.
pub async fn attempt(name: &str) -> Result<Attempt, AppError> {
    use axum::Extension;
    use axum::extract::ConnectInfo;
    let Extension(throttle) = leptos_axum::extract::<Extension<SignInThrottle>>()
        .await
        .map_err(|e| super::internal("the sign-in throttle is missing", e))?;
    let address = leptos_axum::extract::<ConnectInfo<SocketAddr>>().await.ok().map(|ConnectInfo(a)| a.ip());
    throttle.begin(name, address, Instant::now()).map_err(too_many)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    const HOME: Option<IpAddr> = Some(IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1)));
    const AWAY: Option<IpAddr> = Some(IpAddr::V4(std::net::Ipv4Addr::new(198, 51, 100, 7)));

    #[test]
    fn after_five_failures_a_name_waits_a_doubling_delay_capped_at_thirty_seconds() {
        let throttle = SignInThrottle::default();
        let t0 = Instant::now();
        for i in 0..5 {
            assert!(throttle.begin("alice", HOME, t0 + Duration::from_millis(i)).is_ok(), "attempt {i}");
        }
        // The sixth waits, from any address, whatever its case or spaces.
        assert_eq!(throttle.begin("alice", AWAY, t0 + Duration::from_millis(4)).err(), Some(secs(1)));
        assert!(throttle.begin(" Alice ", HOME, t0 + Duration::from_millis(500)).is_err());
        assert!(throttle.begin("bob", HOME, t0).is_ok(), "another name does not wait");
        // Each further failure doubles the wait, up to 30 s and never more.
        let mut now = t0 + secs(2);
        for want in [2, 4, 8, 16, 30, 30, 30] {
            let attempt = throttle.begin("alice", AWAY, now);
            assert!(attempt.is_ok(), "after the wait an attempt goes through");
            assert_eq!(throttle.begin("alice", AWAY, now).err(), Some(secs(want)));
            now += secs(want);
        }
    }

    #[test]
    fn a_success_clears_the_name_and_old_failures_are_forgotten() {
        let throttle = SignInThrottle::default();
        let t0 = Instant::now();
        for _ in 0..4 {
            drop(throttle.begin("alice", HOME, t0));
        }
        throttle.begin("alice", HOME, t0).expect("fifth").succeeded();
        for _ in 0..5 {
            assert!(throttle.begin("alice", HOME, t0).is_ok(), "the count starts again after a success");
        }
        assert!(throttle.begin("alice", HOME, t0).is_err());
        // Fifteen quiet minutes later the failures are forgotten.
        let later = t0 + secs(15 * 60);
        for _ in 0..5 {
            assert!(throttle.begin("alice", HOME, later).is_ok());
        }
    }

    #[test]
    fn one_address_gets_twenty_failures_a_minute_over_all_names() {
        let throttle = SignInThrottle::default();
        let t0 = Instant::now();
        for i in 0..20 {
            assert!(throttle.begin(&format!("user-{i}"), HOME, t0 + secs(i)).is_ok(), "attempt {i}");
        }
        assert_eq!(throttle.begin("admin", HOME, t0 + secs(20)).err(), Some(secs(40)));
        assert!(throttle.begin("admin", AWAY, t0 + secs(20)).is_ok(), "another address does not wait");
        assert!(throttle.begin("admin", HOME, t0 + secs(60)).is_ok(), "a new minute, a new budget");
        // An IPv6 client is one /64: it cannot step around the budget by changing its address.
        let v6 = |last: u16| Some(IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 1, 2, 0, 0, 0, last)));
        for i in 0..20u16 {
            assert!(throttle.begin(&format!("v6-{i}"), v6(i), t0).is_ok());
        }
        assert!(throttle.begin("v6-x", v6(999), t0).is_err());
    }

    #[test]
    fn a_success_gives_the_address_its_try_back() {
        let throttle = SignInThrottle::default();
        let t0 = Instant::now();
        for i in 0..30 {
            throttle.begin(&format!("user-{i}"), HOME, t0).expect("each succeeds").succeeded();
        }
    }

    #[test]
    fn a_flood_of_names_keeps_the_maps_bounded() {
        let throttle = SignInThrottle::new(Policy { max_keys: 100, address_failures: u32::MAX, ..Policy::default() });
        let t0 = Instant::now();
        for i in 0..10_000u32 {
            let address = Some(IpAddr::V4(std::net::Ipv4Addr::from(i)));
            let _ = throttle.begin(&format!("random-{i}"), address, t0 + Duration::from_micros(i.into()));
        }
        let state = throttle.lock();
        assert!(state.names.len() <= 100 && state.addresses.len() <= 100);
        assert!(state.names.len() == 100, "the newest names are kept");
    }

    #[test]
    fn the_message_says_how_long_to_wait() {
        let e = too_many(Duration::from_millis(1_200));
        assert_eq!(e.status(), 429);
        assert_eq!(e.to_string(), "Too many sign-in attempts; try again in 2 s.");
        assert_eq!(too_many(Duration::from_millis(3)).to_string(), "Too many sign-in attempts; try again in 1 s.");
    }
}
