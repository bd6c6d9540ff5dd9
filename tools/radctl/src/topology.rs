// SPDX-License-Identifier: GPL-2.0 OR MIT

//! `radctl topology [URI...]`: the devices as one device group (default:
//! `host` and every `kmod:N`), and for every ordered pair how the second
//! device's queues reach the first's semaphores and buffers.

use crate::error::Result;
use radiance::{Device, DeviceGroup, Edge};
use serde_json::{json, Value};

pub(crate) fn topology(uris: &[String], as_json: bool) -> Result<()> {
    let uris = if uris.is_empty() { Device::enumerate() } else { uris.to_vec() };
    let devices = uris.iter().map(|uri| Device::open(uri)).collect::<radiance::Result<Vec<_>>>()?;
    let group = DeviceGroup::new(&devices)?;
    let t = group.topology();
    let n = t.len();
    let edge = |i, j| t.edge(i, j).unwrap_or_else(|| unreachable!("{i}, {j} are in a group of {n}"));
    if as_json {
        let edges: Vec<Value> =
            (0..n).flat_map(|i| (0..n).map(move |j| (i, j))).map(|(i, j)| edge_json(i, j, edge(i, j))).collect();
        let devices: Vec<Value> = devices
            .iter()
            .enumerate()
            .map(
                |(i, d)| json!({ "index": i, "uri": d.info().uri, "backend": d.info().backend, "name": d.info().name }),
            )
            .collect();
        println!("{}", json!({ "devices": devices, "edges": edges }));
        return Ok(());
    }
    for (i, d) in devices.iter().enumerate() {
        println!("{i}: {:<10} {} ({})", d.info().uri, d.info().name, d.info().backend);
    }
    println!();
    println!("row: the device whose semaphores and buffers are reached; column: the device whose queues reach them");
    println!("each cell: semaphore route / buffer route / link class");
    let cell = |e: Edge| format!("{}/{}/{}", e.semaphore.name(), e.buffer.name(), e.link.name());
    let width =
        (0..n).flat_map(|i| (0..n).map(move |j| (i, j))).map(|(i, j)| cell(edge(i, j)).len()).max().unwrap_or(0);
    print!("{:>4}", "");
    for j in 0..n {
        print!("  {:<width$}", format!("to {j}"));
    }
    println!();
    for i in 0..n {
        print!("{:>4}", format!("{i}"));
        for j in 0..n {
            print!("  {:<width$}", cell(edge(i, j)));
        }
        println!();
    }
    Ok(())
}

fn edge_json(from: usize, to: usize, e: Edge) -> Value {
    json!({ "from": from, "to": to, "semaphore": e.semaphore.name(), "buffer": e.buffer.name(), "link": e.link.name() })
}
