//! The datasets gnnaudit knows by name: the checksum of each file in gnnaudit's `.npz` layout
//! (docs/datasets.md) and where its data comes from upstream, so that `gnnaudit datasets fetch`
//! installs exactly the bytes every reported figure was computed on, or refuses.

/// A dataset of the catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub name: &'static str,
    /// Size of `<name>.npz` in gnnaudit's layout.
    pub bytes: u64,
    /// sha256 of `<name>.npz` in gnnaudit's layout: what a mirror must serve.
    pub sha256: &'static str,
    pub upstream: Upstream,
}

/// Where the data is published, pinned to a commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upstream {
    /// A gnn-benchmark `.npz` the loader reads as is; gnnaudit symmetrises it and drops self loops
    /// to reach its layout. `sha256` is the upstream file's; `content_sha256` is
    /// [`super::content_sha256`] of the dataset in gnnaudit's layout, which the conversion must hit.
    Npz { url: &'static str, sha256: &'static str, content_sha256: &'static str },
    /// A format gnnaudit cannot convert yet: fetch the converted file from a mirror.
    Convert { url: &'static str, sha256: Option<&'static str>, format: &'static str },
}

impl Entry {
    /// The file name in a data directory and on a mirror.
    pub fn file_name(&self) -> String {
        format!("{}.npz", self.name)
    }
}

/// The catalog entry of `name`, if any.
pub fn find(name: &str) -> Option<&'static Entry> {
    CATALOG.iter().find(|e| e.name == name)
}

/// Every name of the catalog, in catalog order.
pub fn names() -> impl Iterator<Item = &'static str> {
    CATALOG.iter().map(|e| e.name)
}

const GNN_BENCHMARK_CORA: &str =
    "https://raw.githubusercontent.com/shchur/gnn-benchmark/1e72912a0810cdf27ae54fd589a3b43358a2b161/data/npz/cora.npz";
const GNN_META_ATTACK_CORA_ML: &str =
    "https://raw.githubusercontent.com/danielzuegner/gnn-meta-attack/982d900d05f19f0bd061b8d4988310bd7baa5f91/data/cora_ml.npz";
const FACEBOOK100_MAT: &str = "a MATLAB .mat file (Traud, Mucha & Porter's Facebook100), converted as GAP/ProGAP's \
     loader does: year classes, one-hot status, gender, major, minor and housing";
const MUSAE_CSV_JSON: &str = "MUSAE edge CSV, feature JSON and target CSV files (Rozemberczki, Allen & Sarkar)";

/// Sizes and checksums as in docs/datasets.md; upstream checksums computed on the pinned commits.
pub static CATALOG: &[Entry] = &[
    Entry {
        name: "cora",
        bytes: 116_858,
        sha256: "59a0e147b8bd33ecc380c44911c827978797ee18747cf6c0eeb775da6ec7acd6",
        upstream: Upstream::Npz {
            url: GNN_BENCHMARK_CORA,
            sha256: "068e22d90c3849b4057dfb05851741428992af058efcd4e7ebb4186f3d581de2",
            content_sha256: "c173af1e3c2692d4ae0369e695b7c2978619f9730f0d763be6af11aaadef702e",
        },
    },
    Entry {
        name: "cora-ml",
        bytes: 830_413,
        sha256: "decf1f68b886426998f6828db1d7f207e023c6aa17584a2ee63c467345f3f99b",
        upstream: Upstream::Npz {
            url: GNN_META_ATTACK_CORA_ML,
            sha256: "ffbe4e64857dc6bf38f1877e4312559a064df84b59d0f32f938717de5d5af0fd",
            content_sha256: "c40028c9b2aad547e5093fdce30302ee545379440a81d81e12947049f4f6486b",
        },
    },
    Entry {
        name: "facebook100-Caltech36",
        bytes: 48_646,
        sha256: "eb98eddaee7a769ffc8330febf5030a6951ca134e4c84fe23c78875466f90738",
        upstream: Upstream::Convert {
            url: "https://raw.githubusercontent.com/sisaman/pyg-datasets/9a92bf1e84f73b7b24dd745eb14f13e4d1979769/datasets/facebook100/Caltech36.mat",
            sha256: Some("597d8307f9aaaaf50343e12a22893c203c52b92e1dd5b3fb35e13f19871d6ffa"),
            format: FACEBOOK100_MAT,
        },
    },
    Entry {
        name: "facebook100-Amherst41",
        bytes: 302_079,
        sha256: "1f67f3b3c202ec2677b424094ca7ebe0e54ccdd33bd63c2b1216b35d10cace43",
        upstream: Upstream::Convert {
            url: "https://raw.githubusercontent.com/sisaman/pyg-datasets/9a92bf1e84f73b7b24dd745eb14f13e4d1979769/datasets/facebook100/Amherst41.mat",
            sha256: Some("3108e4b2edb01be05c5a61147583a40e61012820fff7eebe621dd26018caaf00"),
            format: FACEBOOK100_MAT,
        },
    },
    Entry {
        name: "facebook100-Hamilton46",
        bytes: 330_381,
        sha256: "3a1997ece9d9eeed9af59e6c348b4d5c688ad4477f756484e5b33e934d16c74f",
        upstream: Upstream::Convert {
            url: "https://raw.githubusercontent.com/sisaman/pyg-datasets/9a92bf1e84f73b7b24dd745eb14f13e4d1979769/datasets/facebook100/Hamilton46.mat",
            sha256: Some("0ecf04e8f149fd98bcca55d4e13c22cdc24085a488a83730a9555f05355788b4"),
            format: FACEBOOK100_MAT,
        },
    },
    Entry {
        name: "facebook100-Swarthmore42",
        bytes: 204_709,
        sha256: "cbfe7457f3f0eeac29d8837e94d8d5ef90ad34f7ebd235019cc8bc2920ba634a",
        upstream: Upstream::Convert {
            url: "https://raw.githubusercontent.com/sisaman/pyg-datasets/9a92bf1e84f73b7b24dd745eb14f13e4d1979769/datasets/facebook100/Swarthmore42.mat",
            sha256: Some("302e2c50822e527a63b8ccb9427911f582f272291b1d5a5c3a1d235d047e9870"),
            format: FACEBOOK100_MAT,
        },
    },
    Entry {
        name: "facebook100-Rice31",
        bytes: 662_507,
        sha256: "3e412e05475e5064fa3118a1668f792835345594c98d6ad7a0cd0636e9d4a929",
        upstream: Upstream::Convert {
            url: "https://raw.githubusercontent.com/sisaman/pyg-datasets/9a92bf1e84f73b7b24dd745eb14f13e4d1979769/datasets/facebook100/Rice31.mat",
            sha256: Some("ec7e4b35c6db6a23ca55e5a30bfe1b899c0b5c97e1b5a9abf16f3b8aa08c2537"),
            format: FACEBOOK100_MAT,
        },
    },
    Entry {
        name: "facebook100-Yale4",
        bytes: 1_508_778,
        sha256: "698518f66652b3b1c195c390fbdf595151665afdba88a745d32659a81110fcb1",
        upstream: Upstream::Convert {
            url: "https://raw.githubusercontent.com/sisaman/pyg-datasets/9a92bf1e84f73b7b24dd745eb14f13e4d1979769/datasets/facebook100/Yale4.mat",
            sha256: Some("b26052f24d85446be1ced46b9c92515b359226ca470319983ab562266ed5c7f3"),
            format: FACEBOOK100_MAT,
        },
    },
    Entry {
        name: "facebook100-MIT8",
        bytes: 891_712,
        sha256: "d85cc9377b3e8c1c1fa1d7b16c81a100319c25007fa14fc5fdf7c0ba955cb86b",
        upstream: Upstream::Convert {
            url: "https://raw.githubusercontent.com/sisaman/pyg-datasets/9a92bf1e84f73b7b24dd745eb14f13e4d1979769/datasets/facebook100/MIT8.mat",
            sha256: Some("ad4a4614ba42c6f85bcc6025331dd7b0059d4eab3cdd8ec6d86ded07aaa0b63b"),
            format: FACEBOOK100_MAT,
        },
    },
    Entry {
        name: "facebook100-Berkeley13",
        bytes: 3_338_125,
        sha256: "edef33944a0b65a858ef1fbdd3239e9ac267b727783d0ffaaee5878f4fd4e6f0",
        upstream: Upstream::Convert {
            url: "https://raw.githubusercontent.com/sisaman/pyg-datasets/9a92bf1e84f73b7b24dd745eb14f13e4d1979769/datasets/facebook100/Berkeley13.mat",
            sha256: Some("e8bcf00096b9cc18d95d1401ead634c0f5c4303511dc48b5e8056732387ce291"),
            format: FACEBOOK100_MAT,
        },
    },
    Entry {
        name: "facebook100-Cornell5",
        bytes: 3_095_075,
        sha256: "f7ed8367f251dcc290acb094e581a53c3e1bdcb8759e954eeeb69244ca2e21f1",
        upstream: Upstream::Convert {
            url: "https://raw.githubusercontent.com/sisaman/pyg-datasets/9a92bf1e84f73b7b24dd745eb14f13e4d1979769/datasets/facebook100/Cornell5.mat",
            sha256: Some("d9ff76ae34e855cb77b0779a3a320f7f73f848901cb13352e2734c17804c4aec"),
            format: FACEBOOK100_MAT,
        },
    },
    Entry {
        name: "facebook-pagepage",
        bytes: 1_368_983,
        sha256: "ddc180bceebfcd6f19217abd5d3ea3b76bf50a922efca1a6d80d7cd35c62eed5",
        upstream: Upstream::Convert {
            url: "https://github.com/benedekrozemberczki/MUSAE/tree/5f901232957b/input (edges/facebook_edges.csv, features/facebook.json, target/facebook_target.csv)",
            sha256: None,
            format: MUSAE_CSV_JSON,
        },
    },
    Entry {
        name: "twitch-DE",
        bytes: 910_035,
        sha256: "6fc0edfbfc14d5cdfeb8b6f54d432c74b1ccaaf87e7c3c57c19c5c01c5cc859a",
        upstream: Upstream::Convert {
            url: "https://github.com/benedekrozemberczki/MUSAE/tree/5f901232957b/input (edges/DE_edges.csv, features/DE.json, target/DE_target.csv)",
            sha256: None,
            format: MUSAE_CSV_JSON,
        },
    },
    Entry {
        name: "twitch-ENGB",
        bytes: 376_889,
        sha256: "42d0db40176db4ddcf44bd3a740588f0818a5011784b2279e0ded8c8d45e7341",
        upstream: Upstream::Convert {
            url: "https://github.com/benedekrozemberczki/MUSAE/tree/5f901232957b/input (edges/ENGB_edges.csv, features/ENGB.json, target/ENGB_target.csv)",
            sha256: None,
            format: MUSAE_CSV_JSON,
        },
    },
    Entry {
        name: "twitch-ES",
        bytes: 361_472,
        sha256: "565108ecc1266e640277ccd6dc651dcce62f97a343494cc2c24acf97c45422fc",
        upstream: Upstream::Convert {
            url: "https://github.com/benedekrozemberczki/MUSAE/tree/5f901232957b/input (edges/ES_edges.csv, features/ES.json, target/ES_target.csv)",
            sha256: None,
            format: MUSAE_CSV_JSON,
        },
    },
    Entry {
        name: "twitch-FR",
        bytes: 636_759,
        sha256: "339a168d259b45494befdd093bfda35f3d3deeb935fa1bb7d38ac1fa3476ceaa",
        upstream: Upstream::Convert {
            url: "https://github.com/benedekrozemberczki/MUSAE/tree/5f901232957b/input (edges/FR_edges.csv, features/FR.json, target/FR_target.csv)",
            sha256: None,
            format: MUSAE_CSV_JSON,
        },
    },
    Entry {
        name: "twitch-PTBR",
        bytes: 162_520,
        sha256: "6c7eaa13c0486071cdaba377c5754b16e20a6e7eea9c8d32ad94539848f57206",
        upstream: Upstream::Convert {
            url: "https://github.com/benedekrozemberczki/MUSAE/tree/5f901232957b/input (edges/PTBR_edges.csv, features/PTBR.json, target/PTBR_target.csv)",
            sha256: None,
            format: MUSAE_CSV_JSON,
        },
    },
    Entry {
        name: "twitch-RU",
        bytes: 280_410,
        sha256: "2feb9d7a8585f44741816652685dd87c1da0d1551ff566b501f6d246194fae1d",
        upstream: Upstream::Convert {
            url: "https://github.com/benedekrozemberczki/MUSAE/tree/5f901232957b/input (edges/RU_edges.csv, features/RU.json, target/RU_target.csv)",
            sha256: None,
            format: MUSAE_CSV_JSON,
        },
    },
    Entry {
        name: "twitch-TW",
        bytes: 293_312,
        sha256: "eedb781c99a09e5ce13ee08b433cc336fdbb7666eaf0c5547b10939dbf4e8b7e",
        upstream: Upstream::Convert {
            url: "https://github.com/benedekrozemberczki/MUSAE/tree/5f901232957b/input (edges/TW_edges.csv, features/TW.json, target/TW_target.csv)",
            sha256: None,
            format: MUSAE_CSV_JSON,
        },
    },
];
