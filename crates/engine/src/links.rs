//! The links between ranks as a collective's cost model sees them: one profile for a message
//! within a node (the shared-memory transport's) and one for a message between nodes (the rails
//! together, split the way the multirail strategies split: every rail's chunk finishing at once),
//! and, on a machine whose ranks outnumber its CPUs, what waking a sleeping rank adds to each.

use braid_lane::{Profile, Sample};
use braid_pmi::Bootstrap;
use braid_strategy::multirail::{common_finish_time, RailView};

use crate::sampling::{decode_profile, encode_profile};
use crate::EngineError;

/// The bootstrap key of rank 0's links.
const LINKS_KEY: &str = "braid-links";

/// Predicted message times within a node and between nodes; `None` where the job has no such
/// link.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LinkProfiles {
    pub intra_node: Option<Profile>,
    pub inter_node: Option<Profile>,
    /// Nanoseconds that waking the receiver adds to a message, where ranks sleep while they wait
    /// (an oversubscribed machine; see `wake_up`); `None` where they spin.
    pub wake_up_ns: Option<f64>,
    /// Nanoseconds a waiting rank stays awake (spinning or yielding its core) before it sleeps:
    /// only a wait longer than this pays the wake-up. Infinite where ranks never sleep.
    pub awake_ns: f64,
}

impl LinkProfiles {
    /// The links of a job whose node transport has profile `intra_node` and whose rails have
    /// `rails`.
    pub(crate) fn new(intra_node: Option<&Profile>, rails: &[Profile]) -> LinkProfiles {
        LinkProfiles { intra_node: intra_node.cloned(), inter_node: combined(rails), wake_up_ns: None, awake_ns: 0.0 }
    }
}

/// Makes every rank hold the same links (rank 0's), so that collectives choose alike: profiles
/// cached on different nodes may differ. Collective over the job, but a no-op (and no fence)
/// unless some node holds several ranks and there are several nodes: only then can a hierarchy
/// be chosen, and every rank sees the same `node_of`. Where rank 0's machine is `oversubscribed`,
/// rank 0 measures the wake-up cost and shares it with the profiles, and with how long its ranks
/// stay awake before they sleep.
pub(crate) fn agree(bootstrap: &mut dyn Bootstrap, node_of: &[u32], oversubscribed: bool, links: LinkProfiles) -> Result<LinkProfiles, EngineError> {
    let nodes = node_of.iter().max().map_or(0, |&last| last as usize + 1);
    if nodes < 2 || nodes == node_of.len() {
        return Ok(links);
    }
    let failed = |error: braid_pmi::BootstrapError| EngineError::Init(format!("sharing the link profiles: {error}"));
    if bootstrap.rank() == 0 {
        let encode = |profile: &Option<Profile>| profile.as_ref().map_or_else(|| "none".to_string(), encode_profile);
        let wake_up = if oversubscribed { crate::wake_up::measure() } else { None };
        let wake_up = wake_up.map_or_else(|| "none".to_string(), |nanos| format!("{nanos:.0}"));
        bootstrap.put(LINKS_KEY, &format!("{};{};{wake_up};{}", encode(&links.intra_node), encode(&links.inter_node), links.awake_ns)).map_err(failed)?;
    }
    bootstrap.fence().map_err(failed)?;
    let text = bootstrap.get(LINKS_KEY).map_err(failed)?;
    let malformed = || EngineError::Init(format!("malformed link profiles {text:?}"));
    let mut fields = text.split(';');
    let (Some(intra), Some(inter), Some(wake_up), Some(awake), None) = (fields.next(), fields.next(), fields.next(), fields.next(), fields.next()) else {
        return Err(malformed());
    };
    let wake_up_ns = match wake_up {
        "none" => None,
        nanos => Some(nanos.parse::<f64>().ok().filter(|nanos| nanos.is_finite() && *nanos >= 0.0).ok_or_else(malformed)?),
    };
    let awake_ns = awake.parse::<f64>().ok().filter(|nanos| *nanos >= 0.0).ok_or_else(malformed)?;
    Ok(LinkProfiles { intra_node: decode_profile(intra), inter_node: decode_profile(inter), wake_up_ns, awake_ns })
}

/// The rails as one link: at each sampled size, when idle rails sharing the message finish.
fn combined(rails: &[Profile]) -> Option<Profile> {
    let largest = rails.iter().filter_map(|rail| rail.samples().last()).map(|sample| sample.size).max()?;
    let views: Vec<RailView<'_>> = rails.iter().map(|profile| RailView { profile, backlog_bytes: 0, rate_factor: 1.0, up: true, standing_delay_ns: 0.0 }).collect();
    let samples =
        (0..).map(braid_lane::profile::sample_size).take_while(|&size| size <= largest).map(|size| Sample { size, nanos: common_finish_time(size, &views).unwrap_or(f64::INFINITY) }).collect();
    Some(Profile::from_samples(samples))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_equal_rails_carry_a_large_message_in_about_half_the_time() {
        let rail = Profile::from_model(10_000.0, 100e6, 1 << 24);
        let links = LinkProfiles::new(None, &[rail.clone(), rail.clone()]);
        let both = links.inter_node.unwrap();
        let ratio = both.predict(16 << 20) / rail.predict(16 << 20);
        assert!((0.45..0.55).contains(&ratio), "{ratio}");
        // A tiny message goes on one rail: the latency stays.
        assert!(both.predict(8) >= 0.9 * rail.predict(8));
        assert_eq!(LinkProfiles::new(None, &[]).inter_node, None);
    }

    #[test]
    fn every_rank_takes_rank_0s_links_and_its_wake_up_cost_where_it_is_oversubscribed() {
        for oversubscribed in [false, true] {
            let jobs = braid_pmi::threads::ThreadBootstrap::job(&format!("braid-links-test-{oversubscribed}"), 4);
            let handles: Vec<_> = jobs
                .into_iter()
                .map(|mut bootstrap| {
                    std::thread::spawn(move || {
                        // Each rank's rails differ, as profiles cached on different nodes may.
                        let rail = Profile::from_model(10_000.0 * (bootstrap.rank() + 1) as f64, 100e6, 1 << 20);
                        // And so may how long their ranks stay awake (rank 3: never asleep).
                        let awake_ns = if bootstrap.rank() == 3 { f64::INFINITY } else { 200_000.0 + bootstrap.rank() as f64 };
                        agree(&mut bootstrap, &[0, 0, 1, 1], oversubscribed, LinkProfiles { awake_ns, ..LinkProfiles::new(None, &[rail]) }).unwrap()
                    })
                })
                .collect();
            let links: Vec<LinkProfiles> = handles.into_iter().map(|handle| handle.join().unwrap()).collect();
            assert!(links.iter().all(|agreed| *agreed == links[0]), "{links:?}");
            let rank_0s = LinkProfiles::new(None, &[Profile::from_model(10_000.0, 100e6, 1 << 20)]);
            let predicted = links[0].inter_node.as_ref().unwrap().predict(1 << 10);
            assert!((predicted - rank_0s.inter_node.unwrap().predict(1 << 10)).abs() < 1.0, "{predicted}");
            assert_eq!(links[0].wake_up_ns.is_some(), oversubscribed);
            assert_eq!(links[0].awake_ns, 200_000.0);
        }
    }
}
