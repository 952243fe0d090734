//! Filter evaluation and selector application over a list-sized batch of VNF instances.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use vnfm_sol013::{Filter, Selector, defaults};

fn instances(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| {
            json!({
                "id": format!("{i:08x}-e602-4afa-8e13-962fb5a7d81f"),
                "vnfInstanceName": format!("vnf-{i}"),
                "vnfdId": if i % 10 == 0 { "vnfd-a" } else { "vnfd-b" },
                "vnfProvider": "ACME",
                "instantiationState": if i % 2 == 0 { "INSTANTIATED" } else { "NOT_INSTANTIATED" },
                "vimConnectionInfo": {"vim1": {"vimType": "ETSINFV.OPENSTACK_KEYSTONE.V_3"}},
                "instantiatedVnfInfo": {
                    "flavourId": "simple",
                    "vnfState": "STARTED",
                    "scaleStatus": [{"aspectId": "VDU1_scale", "scaleLevel": i % 4}],
                    "vnfcResourceInfo": [
                        {"id": "c1", "vduId": "VDU1", "computeResource": {"resourceId": "r1"}},
                        {"id": "c2", "vduId": "VDU2", "computeResource": {"resourceId": "r2"}}
                    ]
                },
                "metadata": {"owner": "ops", "createdAt": "2024-05-01T10:00:00Z"},
                "_links": {"self": {"href": format!("/vnflcm/v2/vnf_instances/{i}")}}
            })
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let docs = instances(50_000);
    let filter = Filter::parse(
        "(eq,instantiationState,INSTANTIATED);(gt,instantiatedVnfInfo/scaleStatus/scaleLevel,1);\
         (neq,instantiatedVnfInfo/vnfcResourceInfo/vduId,VDU3);(gte,metadata/createdAt,2024-01-01T00:00:00+01:00)",
    )
    .expect("valid filter");
    c.bench_function("filter 4 terms over 50k instances", |b| {
        b.iter(|| {
            black_box(&docs)
                .iter()
                .filter(|d| filter.matches(d))
                .count()
        });
    });
    let sel = Selector::from_params(
        false,
        Some("instantiatedVnfInfo/vnfcResourceInfo"),
        None,
        false,
    )
    .expect("valid selector");
    let page: Vec<Value> = docs[..100].to_vec();
    c.bench_function("fields selector over a 100-item page", |b| {
        b.iter(|| {
            let mut page = page.clone();
            for d in &mut page {
                sel.apply_with(
                    d,
                    defaults::v2::VNF_INSTANCE_EXCLUDED,
                    defaults::v2::VNF_INSTANCE_MANDATORY,
                );
            }
            page
        });
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
