// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The compute shape a gluon-sim config file gives its GPU, for GET_INFO.
//!
//! gluon-sim (e554ff7 and 013add5 alike) lists its clusters as
//! `[[glug.gluls]]` tables with `num_cores`, `num_warps` (per core) and
//! `num_lanes` (threads per warp). GET_INFO has one shape: the cores of
//! every cluster, and the smallest warps and lanes any of them has (what a
//! launch can count on everywhere). Only those keys are read, line by line:
//! the file's other tables and keys are gluon-sim's business.

use crate::error::{Error, Result};

/// GET_INFO's compute shape.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Shape {
    pub cores: u32,
    pub warps_per_core: u32,
    pub threads_per_warp: u32,
}

/// The shape of the clusters `text` (a gluon-sim config.toml) declares.
pub fn shape(text: &str) -> Result<Shape> {
    let mut clusters: Vec<[Option<u32>; 3]> = Vec::new();
    let mut in_glul = false;
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.starts_with('[') {
            in_glul = line == "[[glug.gluls]]";
            if in_glul {
                clusters.push([None; 3]);
            }
            continue;
        }
        let (Some(cluster), Some((key, value))) = (clusters.last_mut().filter(|_| in_glul), line.split_once('='))
        else {
            continue;
        };
        let slot = match key.trim() {
            "num_cores" => 0,
            "num_warps" => 1,
            "num_lanes" => 2,
            _ => continue,
        };
        let v = value.trim().parse().map_err(|_| Error::Usage(format!("gluon-sim config: {line}: not a number")))?;
        cluster[slot] = Some(v);
    }
    let mut shape = Shape { cores: 0, warps_per_core: u32::MAX, threads_per_warp: u32::MAX };
    for c in &clusters {
        let [Some(cores), Some(warps), Some(lanes)] = *c else {
            return Err(Error::Usage(
                "gluon-sim config: a [[glug.gluls]] table lacks num_cores, num_warps or num_lanes".into(),
            ));
        };
        shape.cores += cores;
        shape.warps_per_core = shape.warps_per_core.min(warps);
        shape.threads_per_warp = shape.threads_per_warp.min(lanes);
    }
    if clusters.is_empty() {
        return Err(Error::Usage("gluon-sim config: no [[glug.gluls]] table".into()));
    }
    Ok(shape)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two clusters of gluon-sim e554ff7's own config.toml.
    const E554FF7: &str = "[server]\nsocket_path = \"./gluon-sim.sock\"\n\n[glug]\ngluon_log_level = 2\n\n\
        [[glug.gluls]]\nid = 0\nnum_cores = 4\nnum_warps = 4\nnum_lanes = 16 # lanes\nregs_per_core = 256\n\n\
        [[glug.gluls]]\nid = 1\nnum_cores = 8\nnum_warps = 8\nnum_lanes = 32\n\n[engine]\nnum_kernel_engines = 1\n";

    #[test]
    fn every_cluster_counts_and_the_smallest_warp_shape_wins() -> Result<()> {
        assert_eq!(shape(E554FF7)?, Shape { cores: 12, warps_per_core: 4, threads_per_warp: 16 });
        Ok(())
    }

    #[test]
    fn keys_outside_a_cluster_are_not_its() {
        assert!(shape("[engine]\nnum_cores = 4\n").is_err());
        assert!(shape("[[glug.gluls]]\nnum_cores = 4\nnum_warps = 4\n").is_err());
        assert!(shape("[[glug.gluls]]\nnum_cores = four\n").is_err());
    }
}
