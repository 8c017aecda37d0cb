//! `gnnaudit account budget`: the budget `train` would claim for a method on a dataset, from the
//! method's registry entry (the same function its training calls), without training.
//! `gnnaudit account epsilon|calibrate`: one of the accountant's event families at raw noise
//! parameters (steps, sampling rate, sigma), or the noise for a target epsilon, with the
//! per-mechanism breakdown (RDP and PLD epsilon).
use crate::ensure;
use crate::error::{Error, Result};
use crate::privacy::accountant::class_dp::{class_dp_sgd, GroupUnit};
use crate::privacy::accountant::methods::{self, SgdSchedule};
use crate::privacy::accountant::{budget, calibrate, default_delta, Budget, Event, PrivacyUnit};
use clap::{Args, Subcommand, ValueEnum};

#[derive(Debug, Args)]
pub struct AccountArgs {
    #[command(subcommand)]
    pub command: AccountCommand,
}

// Parsed once per process: boxing the larger flag sets would only add indirection.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum AccountCommand {
    /// The budget `gnnaudit train` claims for --method on --dataset (same flags as train).
    Budget(BudgetArgs),
    /// The (epsilon, delta) an event family spends at a given noise multiplier.
    Epsilon(EpsilonArgs),
    /// The smallest noise multiplier meeting a target epsilon.
    Calibrate(CalibrateArgs),
}

/// `account budget`: a method's recipe (train's flags) and the data it would train on.
#[derive(Debug, Args)]
pub struct BudgetArgs {
    /// Dataset name (in the data directory), path, or `synthetic`.
    #[arg(long, default_value = "synthetic")]
    pub dataset: String,
    #[arg(long)]
    pub data_dir: Option<std::path::PathBuf>,
    /// Drop classes with fewer nodes (as `train`).
    #[arg(long, default_value_t = 1)]
    pub min_class_count: usize,
    /// The training seed (DPAR's node subsampling and subclass-DP's k-means depend on it).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Seed of the train/val/test split (as `train`).
    #[arg(long, default_value_t = 0)]
    pub split_seed: u64,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub recipe: super::train::RecipeArgs,
}

/// The accountant's event families at raw parameters (not the training methods: `account budget`
/// gives a method's own budget).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EventFamily {
    GapEdp,
    GapNdp,
    ProgapEdp,
    ProgapNdp,
    Dpgnn,
    DpMlp,
    DpSgd,
    Lpgnn,
    EdgeRand,
    /// DPAR-GM: --sigma-pr (Gaussian std on rows clipped to --c1), --sigma (DP-SGD), --num-nodes
    /// = rows M, --degree = referenced-row cap, --batch-size, --steps, --q-prime.
    DparGm,
    /// DPAR-EM (v0; v1 with --em-epsilon2): --em-epsilon per Gumbel pick, --top-k, rest as dpar-gm.
    DparEm,
    /// DPAR's Features baseline: Poisson DP-SGD at rate --batch-size / --num-nodes, --q-prime.
    DparFeatures,
    /// Algorithm 5 over classes (--units = number of classes, --sample-rate = q per class).
    ClassDpMlp,
    /// Algorithm 5 over subclasses (--units = number of subclasses).
    SubclassDpMlp,
}

#[derive(Debug, Args)]
pub struct MethodArgs {
    /// The event family (`--method` is its old name).
    #[arg(long = "event", visible_alias = "method", value_enum)]
    pub method: EventFamily,
    /// Hops K (GAP) or stages K (ProGAP).
    #[arg(long, default_value_t = 2)]
    pub hops: u64,
    /// gap-edp / progap-edp: price one entry of A (one direction of an edge, the GAP and ProGAP
    /// papers' unit, sensitivity 1) instead of one undirected edge (sensitivity sqrt(2)).
    #[arg(long)]
    pub directed_entry: bool,
    /// Degree bound D (node-level GAP/ProGAP, DP-GNN's K).
    #[arg(long, default_value_t = 100)]
    pub degree: u64,
    /// DP-SGD steps (per module for GAP-NDP, per stage for ProGAP-NDP, total for DP-GNN).
    #[arg(long, default_value_t = 1000)]
    pub steps: u64,
    /// Poisson sampling rate q of DP-SGD.
    #[arg(long, default_value_t = 0.01)]
    pub sample_rate: f64,
    /// Encoder DP-SGD steps for GAP-NDP (0 = no encoder).
    #[arg(long, default_value_t = 0)]
    pub encoder_steps: u64,
    /// DP-GNN: number of nodes N.
    #[arg(long, default_value_t = 10_000)]
    pub num_nodes: u64,
    /// DP-GNN: batch size m (sampled without replacement).
    #[arg(long, default_value_t = 256)]
    pub batch_size: u64,
    /// Target delta; defaults to 1/10^digits(--units) when --units is given.
    #[arg(long)]
    pub delta: Option<f64>,
    /// Number of private units (edges for edge-level, nodes for node-level) for the default delta.
    #[arg(long)]
    pub units: Option<usize>,
    /// LPGNN feature epsilon (eps_x).
    #[arg(long)]
    pub epsilon_x: Option<f64>,
    /// LPGNN label epsilon (eps_y).
    #[arg(long)]
    pub epsilon_y: Option<f64>,
    /// EdgeRand: epsilon of the randomized response on the adjacency.
    #[arg(long)]
    pub ldp_epsilon: Option<f64>,
    /// DPAR: Gaussian std of the DP-APPR rows (dpar-gm).
    #[arg(long)]
    pub sigma_pr: Option<f64>,
    /// DPAR-GM: L2 clip C1 of a row.
    #[arg(long, default_value_t = 0.01)]
    pub c1: f64,
    /// DPAR-EM: epsilon of one Gumbel pick.
    #[arg(long)]
    pub em_epsilon: Option<f64>,
    /// DPAR-EM v1: epsilon of a row's Laplace values.
    #[arg(long)]
    pub em_epsilon2: Option<f64>,
    /// DPAR-EM: picks per row (top-K).
    #[arg(long, default_value_t = 4)]
    pub top_k: u64,
    /// DPAR: node subsampling rate q'.
    #[arg(long, default_value_t = 1.0)]
    pub q_prime: f64,
    /// Class/subclass-DP neighbouring relation.
    #[arg(long, value_enum, default_value_t = crate::privacy::accountant::class_dp::Relation::Unbounded)]
    pub relation: crate::privacy::accountant::class_dp::Relation,
    /// Class/subclass-DP: accept --delta >= 1/--units, with a loud warning.
    #[arg(long)]
    pub allow_large_delta: bool,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct EpsilonArgs {
    #[command(flatten)]
    pub m: MethodArgs,
    /// Noise multiplier sigma (std / sensitivity; GAP/ProGAP-NDP: the shared noise scale).
    #[arg(long)]
    pub sigma: Option<f64>,
}

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    #[command(flatten)]
    pub m: MethodArgs,
    /// Target epsilon.
    #[arg(long)]
    pub epsilon: f64,
}

impl EventFamily {
    fn unit(self) -> PrivacyUnit {
        match self {
            EventFamily::GapEdp | EventFamily::ProgapEdp | EventFamily::EdgeRand => PrivacyUnit::Edge,
            EventFamily::Lpgnn => PrivacyUnit::Local,
            EventFamily::ClassDpMlp => PrivacyUnit::Class,
            EventFamily::SubclassDpMlp => PrivacyUnit::Subclass,
            _ => PrivacyUnit::Node,
        }
    }
    fn has_noise(self) -> bool {
        !matches!(self, EventFamily::Lpgnn | EventFamily::EdgeRand)
    }
    fn name(self) -> String {
        self.to_possible_value().map(|v| v.get_name().to_string()).unwrap_or_default()
    }
}

/// The largest --steps / --hops the accountant is asked to compose.
const MAX_COUNT: u64 = 1 << 40;

impl MethodArgs {
    /// Validates the method's parameters once, naming the flag.
    fn validate(&self) -> Result<f64> {
        let m = self.method;
        if matches!(m, EventFamily::GapEdp | EventFamily::GapNdp | EventFamily::ProgapEdp | EventFamily::ProgapNdp) {
            ensure!(self.hops >= 1, Error::invalid("--hops", "must be at least 1"));
        }
        let class_dp = matches!(m, EventFamily::ClassDpMlp | EventFamily::SubclassDpMlp);
        if class_dp
            || matches!(
                m,
                EventFamily::GapNdp
                    | EventFamily::ProgapNdp
                    | EventFamily::Dpgnn
                    | EventFamily::DpMlp
                    | EventFamily::DpSgd
            )
        {
            ensure!(self.steps >= 1, Error::invalid("--steps", "must be at least 1"));
            // The accountants count compositions in u64 arithmetic (doubling, sums over parts):
            // far beyond any training run, and far from overflowing.
            ensure!(
                self.steps <= MAX_COUNT && self.encoder_steps <= MAX_COUNT,
                Error::invalid("--steps", format!("at most {MAX_COUNT} (more steps than any training run)"))
            );
        }
        ensure!(self.hops <= MAX_COUNT, Error::invalid("--hops", format!("at most {MAX_COUNT}")));
        ensure!(
            !self.directed_entry || matches!(m, EventFamily::GapEdp | EventFamily::ProgapEdp),
            Error::invalid("--directed-entry", "only gap-edp and progap-edp price an edge; drop the flag")
        );
        if class_dp
            || matches!(m, EventFamily::GapNdp | EventFamily::ProgapNdp | EventFamily::DpMlp | EventFamily::DpSgd)
        {
            let q = self.sample_rate;
            ensure!(q > 0.0 && q <= 1.0, Error::invalid("--sample-rate", format!("must be in (0, 1], got {q}")));
        }
        if matches!(m, EventFamily::GapNdp | EventFamily::ProgapNdp | EventFamily::Dpgnn) {
            ensure!(self.degree >= 1, Error::invalid("--degree", "must be at least 1"));
        }
        if matches!(m, EventFamily::DparGm | EventFamily::DparEm | EventFamily::DparFeatures) {
            ensure!(self.steps >= 1 && self.steps <= MAX_COUNT, Error::invalid("--steps", "must be at least 1"));
            ensure!(
                self.q_prime > 0.0 && self.q_prime <= 1.0,
                Error::invalid("--q-prime", format!("must be in (0, 1], got {}", self.q_prime))
            );
            ensure!(self.top_k >= 1, Error::invalid("--top-k", "must be at least 1"));
        }
        if matches!(m, EventFamily::Dpgnn | EventFamily::DparGm | EventFamily::DparEm | EventFamily::DparFeatures) {
            ensure!(
                self.batch_size >= 1 && self.batch_size <= self.num_nodes,
                Error::invalid("--batch-size", format!("must be in [1, --num-nodes = {}]", self.num_nodes))
            );
        }
        for (flag, v) in
            [("--epsilon-x", self.epsilon_x), ("--epsilon-y", self.epsilon_y), ("--ldp-epsilon", self.ldp_epsilon)]
        {
            if let Some(e) = v {
                // An infinite part is a mechanism that does not perturb: its guarantee is void.
                ensure!(e > 0.0 && e.is_finite(), Error::invalid(flag, format!("must be > 0 and finite, got {e}")));
            }
        }
        if class_dp {
            // U is the number of classes or subclasses, whose default delta (10^-digits(U)) would
            // protect nothing: the delta is explicit and checked against 1/U.
            let units =
                self.units.ok_or_else(|| Error::invalid("--units", "give the number of classes/subclasses U"))?;
            let delta = self.delta.ok_or_else(|| {
                Error::invalid("--delta", "give --delta (training defaults to 10^-digits of the node count)")
            })?;
            ensure!(delta > 0.0 && delta < 1.0, Error::invalid("--delta", format!("must be in (0, 1), got {delta}")));
            crate::methods::class_dp::check_delta(m == EventFamily::ClassDpMlp, delta, units, self.allow_large_delta)?;
            return Ok(delta);
        }
        let delta = match (self.delta, self.units) {
            (Some(d), _) => d,
            (None, Some(n)) => {
                ensure!(n >= 1, Error::invalid("--units", "must be at least 1"));
                default_delta(n)
            }
            (None, None) if !m.has_noise() => 1e-10, // pure LDP: delta plays no role
            (None, None) => {
                return Err(Error::invalid("--delta", "give --delta or --units (the number of private units)"))
            }
        };
        ensure!(delta > 0.0 && delta < 1.0, Error::invalid("--delta", format!("must be in (0, 1), got {delta}")));
        Ok(delta)
    }

    fn event(&self, sigma: f64) -> Result<Event> {
        let sched = SgdSchedule::new(self.sample_rate, self.steps);
        Ok(match self.method {
            EventFamily::GapEdp if self.directed_entry => methods::gap_edge(self.hops, sigma),
            EventFamily::GapEdp => methods::gap_undirected_edge(self.hops, sigma),
            EventFamily::GapNdp => methods::gap_node(
                self.hops,
                self.degree,
                sigma,
                (self.encoder_steps > 0).then(|| SgdSchedule::new(self.sample_rate, self.encoder_steps)),
                sched,
            ),
            EventFamily::ProgapEdp if self.directed_entry => methods::progap_edge(self.hops, sigma),
            EventFamily::ProgapEdp => methods::progap_undirected_edge(self.hops, sigma),
            EventFamily::ProgapNdp => methods::progap_node(self.hops, self.degree, sigma, sched),
            EventFamily::Dpgnn => methods::dpgnn(self.num_nodes, self.degree, self.batch_size, sigma, self.steps),
            EventFamily::DpMlp | EventFamily::DpSgd => methods::dp_sgd(self.sample_rate, self.steps, sigma),
            EventFamily::Lpgnn => {
                let (x, y) = (self.epsilon_x.unwrap_or(f64::INFINITY), self.epsilon_y.unwrap_or(f64::INFINITY));
                ensure!(
                    x.is_finite() || y.is_finite(),
                    Error::invalid("--epsilon-x", "LPGNN needs --epsilon-x and/or --epsilon-y")
                );
                methods::lpgnn(x, y)
            }
            EventFamily::ClassDpMlp | EventFamily::SubclassDpMlp => {
                let unit = if self.method == EventFamily::ClassDpMlp { GroupUnit::Class } else { GroupUnit::Subclass };
                class_dp_sgd(unit, self.relation, self.sample_rate, self.steps, sigma)
            }
            EventFamily::EdgeRand => methods::edge_rand(
                self.ldp_epsilon.ok_or_else(|| Error::invalid("--ldp-epsilon", "EdgeRand needs --ldp-epsilon"))?,
            ),
            EventFamily::DparGm | EventFamily::DparEm | EventFamily::DparFeatures => self.dpar_event(sigma)?,
        })
    }

    /// DPAR's sound event, built by the same function `train` records its budget with.
    fn dpar_event(&self, sigma: f64) -> Result<Event> {
        use crate::methods::dpar::{sound_event, SgdShape, Variant};
        use crate::privacy::accountant::dpar::ApprRelease;
        let positive = |flag: &str, v: Option<f64>| -> Result<f64> {
            let v = v.ok_or_else(|| Error::invalid(flag, format!("required for {}", self.method.name())))?;
            ensure!(v.is_finite() && v > 0.0, Error::invalid(flag, format!("must be > 0 and finite, got {v}")));
            Ok(v)
        };
        let (variant, appr) = match self.method {
            EventFamily::DparGm => {
                ensure!(self.c1.is_finite() && self.c1 > 0.0, Error::invalid("--c1", "must be > 0 and finite"));
                (Variant::Gm, ApprRelease::Gaussian { sigma: positive("--sigma-pr", self.sigma_pr)?, c1: self.c1 })
            }
            EventFamily::DparEm => {
                let eps2 = self.em_epsilon2.map(|e| positive("--em-epsilon2", Some(e))).transpose()?;
                let v = if eps2.is_some() { Variant::Em1 } else { Variant::Em0 };
                (v, ApprRelease::Exponential { eps: positive("--em-epsilon", self.em_epsilon)?, k: self.top_k, eps2 })
            }
            _ => (Variant::Features, ApprRelease::None),
        };
        let shape = SgdShape { rows: self.num_nodes, cap: self.degree, batch: self.batch_size, steps: self.steps };
        Ok(sound_event(variant, appr, shape, sigma, self.q_prime))
    }
}

/// `account budget`: the dataset prepared as `train` prepares it, then the registry's budget.
fn budget_of(a: BudgetArgs) -> Result<()> {
    let recipe = a.recipe.to_recipe()?;
    recipe.validate()?;
    let raw = crate::data::load_dataset(&a.dataset, a.data_dir.as_deref())?;
    let ds =
        crate::data::transforms::prepare_like_gap(&raw, a.min_class_count, recipe.method.spec().split, a.split_seed)?;
    let b = crate::methods::budget(&recipe, &ds, a.seed)?;
    print_budget(recipe.method.name(), &b, a.json)
}

pub fn run(args: AccountArgs) -> Result<()> {
    match args.command {
        AccountCommand::Budget(a) => budget_of(a),
        AccountCommand::Epsilon(a) => {
            let (name, b) = epsilon_budget(&a)?;
            print_budget(&name, &b, a.m.json)
        }
        AccountCommand::Calibrate(a) => {
            let (name, b) = calibrated_budget(&a)?;
            print_budget(&name, &b, a.m.json)
        }
    }
}

/// `account epsilon`'s event family and budget (also what Python's `accountant.epsilon` returns).
pub fn epsilon_budget(a: &EpsilonArgs) -> Result<(String, Budget)> {
    let delta = a.m.validate()?;
    let sigma = if a.m.method.has_noise() {
        let s = a.sigma.ok_or_else(|| Error::invalid("--sigma", "required for this method"))?;
        crate::privacy::accountant::analytic::check_noise("--sigma", s)?;
        s
    } else {
        1.0
    };
    let event = a.m.event(sigma)?;
    let noise = if a.m.method.has_noise() { vec![("sigma".to_string(), sigma)] } else { vec![] };
    // The accountant's numerical range ends somewhere (the analytic Gaussian's epsilon does
    // not converge for a tiny sigma): bad input naming the flag, exit 2.
    let b = budget(&event, a.m.method.unit(), None, delta, noise).map_err(|e| match numerical(e) {
        Ok(m) => Error::invalid(
            "--sigma",
            format!("{m} at --sigma {}: use a larger --sigma or fewer --hops/--steps", crate::error::num(sigma)),
        ),
        Err(e) => e,
    })?;
    Ok((a.m.method.name(), b))
}

/// `account calibrate`'s event family and budget at the calibrated noise.
pub fn calibrated_budget(a: &CalibrateArgs) -> Result<(String, Budget)> {
    ensure!(
        a.epsilon.is_finite() && a.epsilon > 0.0,
        Error::invalid("--epsilon", format!("must be > 0, got {}", a.epsilon))
    );
    let delta = a.m.validate()?;
    ensure!(
        a.m.method.has_noise(),
        Error::invalid(
            "--method",
            format!("{} has no noise to calibrate: its epsilon is its parameter", a.m.method.name())
        )
    );
    a.m.event(1.0)?.validate()?;
    let sigma = calibrate(a.epsilon, delta, |s| a.m.event(s).expect("validated"))?;
    let event = a.m.event(sigma)?;
    let b = budget(&event, a.m.method.unit(), Some(a.epsilon), delta, vec![("sigma".into(), sigma)]).map_err(|e| {
        match numerical(e) {
            Ok(m) => Error::invalid(
                "--epsilon",
                format!("{m} at --epsilon {}: use a smaller --epsilon", crate::error::num(a.epsilon)),
            ),
            Err(e) => e,
        }
    })?;
    Ok((a.m.method.name(), b))
}

/// What `--json` prints for a budget.
pub fn budget_json(name: &str, b: &Budget) -> serde_json::Value {
    serde_json::json!({ "method": name, "budget": b, "claimed_epsilon": b.claimed_epsilon() })
}

fn print_budget(name: &str, b: &Budget, json: bool) -> Result<()> {
    if json {
        let v = budget_json(name, b);
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    println!("method: {name} ({:?}-level), delta = {:e}", b.privacy_unit, b.delta);
    for (k, v) in &b.noise {
        println!("{k} = {v:.6}");
    }
    if let Some(t) = b.target_epsilon {
        println!("target epsilon = {t}");
    }
    match b.rdp_order {
        Some(a) => println!("epsilon (RDP, Balle et al. 2020 conversion) = {:.6} at order {a}", b.epsilon_rdp),
        None => println!("epsilon (pure composition) = {:.6}", b.epsilon_rdp),
    }
    match (b.epsilon_pld, &b.pld_fallback) {
        (Some(e), _) => println!("epsilon (PLD, tight) = {e:.6}"),
        (None, Some(why)) => {
            println!("epsilon (PLD) = not computed: {why}");
            println!("FALLBACK: the claimed epsilon is the RDP bound {:.6} (valid, looser than PLD)", b.epsilon_rdp)
        }
        (None, None) => println!("epsilon (PLD) = n/a (event not supported by the PLD accountant)"),
    }
    println!("claimed epsilon (the tighter valid bound) = {:.6}", b.claimed_epsilon());
    println!("components (each alone at the same delta, RDP):");
    for c in &b.components {
        println!("  {:<50} eps = {:>10.6}   {}", c.name, c.epsilon, c.mechanism);
    }
    Ok(())
}

/// The message of an accountant's numerical failure (an internal error, or the analytic
/// Gaussian's refusal of too little noise), to be restated with the user's flag; other errors
/// pass through.
fn numerical(e: Error) -> std::result::Result<String, Error> {
    match e {
        Error::Other(m) => Ok(m),
        Error::InvalidParam { message, .. }
            if message.starts_with(crate::privacy::accountant::analytic::NON_CONVERGENCE) =>
        {
            Ok(message)
        }
        e => Err(e),
    }
}
