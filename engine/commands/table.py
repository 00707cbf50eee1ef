"""The command table: every command mbgpu knows, its parameters, allowed values and defaults.

Defaults are MrBayes 3.2.7a's (shared/data/mrbayes/DEFAULTS.md) except where `docs/commands.md`
says otherwise. `help` and docs/commands.md are generated from this table.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mbgpu.param_kinds import AA_MODELS

from . import limits as L
from .params import Choice, Divisions, Float, Int, Numbers, Param, Prior, Text, WeightScheme, YesNo

P = Prior


def _lset() -> list[Param]:
    return [
        Divisions("Applyto", "all", "divisions the settings apply to"),
        Choice("Nucmodel", "4by4", "nucleotide model type", ("4by4", "Doublet", "Codon", "Protein"),
               supported=("4by4",)),
        Choice("Nst", "1", "number of substitution types (1=JC/F81, 2=K80/HKY, 6=SYM/GTR)",
               ("1", "2", "6", "Mixed"), supported=("1", "2", "6")),
        Choice("Code", "Universal", "genetic code", ("Universal", "Vertmt", "Invermt", "Yeast", "Mycoplasma",
                                                    "Ciliate", "Echinoderm", "Euplotid", "Metmt"), supported=()),
        Choice("Ploidy", "Diploid", "ploidy level (the coalescent prior's theta)", ("Haploid", "Diploid", "Zlinked")),
        Choice("Rates", "Equal", "rate variation across sites",
               ("Equal", "Gamma", "LNorm", "Propinv", "Invgamma", "Adgamma", "Kmixture"),
               supported=("Equal", "Gamma", "Propinv", "Invgamma")),
        Int("Ngammacat", 4, "number of discrete gamma categories", 2, L.MAX_CATS),
        Int("Nlnormcat", 4, "number of lognormal categories", 2, L.MAX_CATS, supported=()),
        Int("Nmixtcat", 4, "number of mixture categories", 2, L.MAX_CATS, supported=()),
        Int("Nbetacat", 5, "number of beta categories", 2, L.MAX_CATS, supported=()),
        Choice("Omegavar", "Equal", "omega variation (codon models)", ("Equal", "Ny98", "M3"), supported=()),
        YesNo("Covarion", "No", "covarion model", supported=()),
        Choice("Coding", "Variable", "how characters were sampled (Mkv: Variable)",
               ("All", "Variable", "Informative", "Nosingletons", "Noabsencesites", "Nopresencesites",
                "Nosingletonabsence", "Nosingletonpresence"), supported=("All", "Variable")),
        YesNo("Parsmodel", "No", "parsimony model", supported=()),
    ]


_AA = tuple(m.capitalize() for m in AA_MODELS)      # MrBayes' spellings: Poisson, ..., Lg, Equalin, Gtr


def _aa_supported(value) -> bool:
    """fixed(NAME) for every model but gtr (mixed and gtr are not supported yet)"""
    return value.kind == "Fixed" and not any(str(a).lower() == "gtr" for a in value.args)


def _prset() -> list[Param]:
    no = ()  # only the default: the model or feature the prior belongs to is not supported yet
    return [
        Divisions("Applyto", "all", "divisions the settings apply to"),
        P("Tratiopr", "Beta(1,1)", "transition/transversion rate ratio", ("Beta", "Fixed")),
        P("Revmatpr", "Dirichlet(1,1,1,1,1,1)", "GTR exchangeabilities", ("Dirichlet", "Fixed")),
        P("Aamodelpr", "Fixed(Poisson)", "amino-acid model", ("Fixed", "Mixed"), named=True, words={"Fixed": _AA},
          supported=_aa_supported),
        P("Aarevmatpr", "Dirichlet(1,...)", "amino-acid GTR exchangeabilities", ("Dirichlet", "Fixed"), supported=no),
        P("Omegapr", "Dirichlet(1,1)", "dN/dS", ("Dirichlet", "Fixed"), supported=no),
        P("Ny98omega1pr", "Beta(1,1)", "NY98 omega1", ("Beta", "Fixed"), supported=no),
        P("Ny98omega3pr", "Exponential(1)", "NY98 omega3", ("Uniform", "Exponential", "Fixed"), supported=no),
        P("M3omegapr", "Exponential", "M3 omegas", ("Exponential", "Fixed"), supported=no),
        P("Codoncatfreqs", "Dirichlet(1,1,1)", "codon category frequencies", ("Dirichlet", "Fixed"), supported=no),
        P("Statefreqpr", "Dirichlet(1,1,1,1)", "state frequencies", ("Dirichlet", "Fixed"), named=True),
        P("Shapepr", "Exponential(1)", "gamma shape", ("Uniform", "Exponential", "Fixed")),
        P("Ratecorrpr", "Uniform(-1,1)", "autocorrelated gamma correlation", ("Uniform", "Fixed"), supported=no),
        P("Pinvarpr", "Uniform(0,1)", "proportion of invariable sites", ("Uniform", "Fixed")),
        P("Covswitchpr", "Uniform(0,100)", "covarion switching rates", ("Uniform", "Exponential", "Fixed"),
          supported=no),
        P("Symdirihyperpr", "Fixed(Infinity)", "symmetric Dirichlet hyperprior",
          ("Uniform", "Exponential", "Fixed"), supported=no),
        P("Topologypr", "Uniform", "topology", ("Uniform", "Constraints", "Fixed", "Speciestree"), named=True,
          supported=("Uniform", "Fixed", "Constraints")),
        P("Brlenspr", "Unconstrained:GammaDir(1,0.1,1,1)", "branch lengths", ("Unconstrained", "Clock", "Fixed"),
          subs={"Unconstrained": ("Exponential", "Uniform", "GammaDir", "invGamDir", "twoExp"),
                "Clock": ("Uniform", "Birthdeath", "Coalescence", "Fossilization", "Speciestree")},
          named=True, supported=("Unconstrained:Exponential", "Unconstrained:Uniform", "Unconstrained:GammaDir",
                                 "Clock:Uniform", "Clock:Birthdeath", "Clock:Coalescence", "Clock:Fossilization")),
        P("Treeagepr", "Gamma(1,1)", "tree age", ("Gamma", "Uniform", "Fixed", "Truncatednormal", "Lognormal",
                                                  "Offsetlognormal", "Offsetgamma", "Offsetexponential")),
        P("Speciationpr", "Exponential(10)", "net speciation rate", ("Uniform", "Exponential", "Fixed")),
        P("Extinctionpr", "Beta(1,1)", "relative extinction rate", ("Beta", "Fixed")),
        P("Fossilizationpr", "Beta(1,1)", "relative fossilization rate", ("Beta", "Fixed")),
        Choice("Samplestrat", "Random", "taxon sampling strategy", ("Random", "Diversity", "Cluster", "FossilTip")),
        Float("Sampleprob", 1.0, "extant taxon sampling probability", 0.0, 1.0),
        P("Popsizepr", "Gamma(1,10)", "population size", ("Lognormal", "Gamma", "Uniform", "Normal", "Fixed")),
        Choice("Popvarpr", "Equal", "population size variation", ("Equal", "Variable"), supported=no),
        Choice("Nodeagepr", "Unconstrained", "node ages", ("Unconstrained", "Calibrated")),
        P("Clockratepr", "Fixed(1)", "clock rate", ("Fixed", "Normal", "Lognormal", "Exponential", "Gamma")),
        Choice("Clockvarpr", "Strict", "clock rate variation", ("Strict", "Cpp", "TK02", "Igr", "Mixed"),
               supported=("Strict", "Cpp", "TK02", "Igr")),
        P("Cppratepr", "Exponential(0.1)", "CPP rate", ("Fixed", "Exponential")),
        P("Cppmultdevpr", "Fixed(0.4)", "CPP multiplier deviation", ("Fixed",)),
        P("TK02varpr", "Exponential(1)", "TK02 variance", ("Fixed", "Exponential", "Uniform")),
        P("Igrvarpr", "Exponential(10)", "IGR variance", ("Fixed", "Exponential", "Uniform")),
        P("Ratepr", "Fixed", "partition rate multipliers", ("Fixed", "Variable", "Dirichlet")),
        P("Generatepr", "Fixed", "gene rate multipliers", ("Fixed", "Variable", "Dirichlet"), supported=no),
    ]


def _mcmc() -> list[Param]:
    return [
        Int("Ngen", 1000000, "number of generations", 1), Int("Nruns", 2, "independent runs", 1, L.MAX_RUNS),
        Int("Nchains", 4, "chains per run (1 cold, the rest heated)", 1, L.MAX_CHAINS),
        Float("Temp", 0.1, "heating: heat(i) = 1/(1 + temp*i)", 0.0),
        WeightScheme("Reweight", (0.0, 0.0), "percent of characters reweighted in heated chains (down, up"
                     "[, increment])"),
        Int("Swapfreq", 1, "generations between swap attempts", 1), Int("Nswaps", 1, "swaps per attempt", 1),
        Int("Samplefreq", 500, "generations between samples", 1), Int("Printfreq", 1000, "screen output", 1),
        YesNo("Printall", "Yes", "print all chains (No: each run's cold chain and its position)"),
        Int("Printmax", 8, "max chains printed", 1),
        YesNo("Mcmcdiagn", "Yes", "compute convergence diagnostics"),
        Int("Diagnfreq", 5000, "generations between diagnostics", 1),
        Choice("Diagnstat", "Avgstddev", "split-frequency statistic", ("Avgstddev", "Maxstddev")),
        Float("Minpartfreq", 0.10, "minimum split frequency in diagnostics", *L.MINPARTFREQ),
        YesNo("Allchains", "No", "acceptance rates of every chain (.mcmc columns, end-of-run tables)"),
        YesNo("Allcomps", "No", "split-frequency statistic of every pair of runs (screen table, .mcmc columns)"),
        YesNo("Relburnin", "Yes", "burn-in as a fraction"), Int("Burnin", 0, "burn-in samples", 0),
        Float("Burninfrac", 0.25, "burn-in fraction", *L.BURNINFRAC),
        YesNo("Stoprule", "No", "stop when the diagnostic falls below stopval"),
        Float("Stopval", 0.05, "stop value", *L.STOPVAL),
        YesNo("Savetrees", "No", "keep burn-in trees in memory, not read back from file (same results)"),
        YesNo("Checkpoint", "Yes", "write checkpoints"), Int("Checkfreq", 2000, "generations between checkpoints", 1),
        Text("Filename", "", "output file stem (default: the data file name)"),
        Choice("Startparams", "Current", "start parameter values (Reset: defaults, not startvals)",
               ("Current", "Reset")),
        Choice("Starttree", "Current", "start trees (Random, Parsimony: not the startvals trees)",
               ("Current", "Random", "Parsimony")),
        Int("Nperts", 0, "random NNIs applied to each start tree", 0), YesNo("Data", "Yes", "use the data (No: sample the prior)"),
        YesNo("Ordertaxa", "No", "order the basal subtrees of .t trees by smallest taxon (as 3.2.7a)"),
        YesNo("Append", "No", "continue from a checkpoint"),
        YesNo("Autotune", "Yes", "tune moves"), Int("Tunefreq", 100, "tries between tuning", L.MIN_TUNEFREQ),
    ]


def _ss_only() -> list[Param]:
    """The parameters only `ss` and `ssp` have (MrBayes' DoSsParm); the rest of theirs are mcmc's."""
    return [
        Float("Alpha", 0.4, "powers are Beta(alpha,1) quantiles (0 < alpha)"),
        Int("Burninss", -1, "samples before step 1 (negative: that many step lengths)"),
        Int("Nsteps", 50, "number of steps", 1),
        YesNo("Fromprior", "No", "step 1 samples the prior (Yes) or near the posterior (No)"),
    ]


def _ss() -> list[Param]:
    """mcmc's parameters (shared with it, as in MrBayes) and ss' own."""
    return _mcmc() + _ss_only()


def _sumss() -> list[Param]:
    return [
        YesNo("Allruns", "Yes", "no effect, as in MrBayes 3.2.7a: the runs share one plot"),
        YesNo("Askmore", "Yes", "ask for more tables and plots (mbgpu never asks)"),
        YesNo("Relburnin", "Yes", "burn-in in each step as a fraction"),
        Int("Burnin", 0, "burn-in samples per step", 0),
        Float("Burninfrac", 0.25, "burn-in fraction per step", *L.BURNINFRAC),
        Float("Discardfrac", 0.8, "fraction of a step not plotted", 0.0, 1.0),
        Text("Filename", "", "file stem of the .p files (shared with sump)"), Int("Nruns", 2, "number of runs", 1),
        Int("Steptoplot", 0, "step shown in the step plot (0: the initial burn-in)", 0),
        Int("Smoothing", 0, "samples on each side averaged in the joined plot", 0),
    ]


def _set() -> list[Param]:
    return [
        Int("Seed", None, "random seed (default: from the clock)", 1, L.SEED_MAX),
        Int("Swapseed", None, "swap seed", 1, L.SEED_MAX),
        Text("Dir", "", "working directory for output"), Text("Partition", "", "active character partition"),
        Text("Speciespartition", "", "species partition", supported=()), YesNo("Autoclose", "No", "do not ask to extend runs"),
        YesNo("Nowarnings", "No", "suppress warnings"), YesNo("Autoreplace", "Yes", "overwrite output files"),
        YesNo("Quitonerror", "No", "leave on the first error"), YesNo("Scientific", "Yes", "scientific notation"),
        Int("Precision", 6, "decimals in output files", *L.PRECISION), YesNo("Usebeagle", "Yes", "use the GPU/CPU backend"),
        Int("Beagleresource", 99, "backend resource number", 0),
        Choice("Beagledevice", "GPU", "GPU (when present) or CPU", ("CPU", "GPU")),
        Choice("Beagleprecision", "Double", "floating point precision of the backend", ("Single", "Double")),
        Choice("Beaglescaling", "Dynamic", "rescaling", ("Always", "Dynamic")),
        YesNo("Beaglesse", "No", "accepted for compatibility"), YesNo("Beaglethreads", "Yes", "accepted"),
        Int("Beaglethreadcount", 99, "accepted for compatibility", 0), YesNo("Beaglefloattips", "No", "accepted"),
        Int("Sitesplit", 1, "MPI: ranks per chain group that split the site patterns (docs/hpc.md)", 1),
        Choice("Backend", "Auto", "likelihood backend (mbgpu only): Auto follows usebeagle/beagledevice and "
               "the CUDA device found; CPU or GPU overrides them", ("Auto", "CPU", "GPU")),
    ]


def _sump() -> list[Param]:
    return [
        YesNo("Relburnin", "Yes", "burn-in as a fraction"), Int("Burnin", 0, "burn-in samples", 0),
        Float("Burninfrac", 0.25, "burn-in fraction", *L.BURNINFRAC), Int("Nruns", 2, "number of runs", 1),
        Text("Filename", "", "file stem of the .p files"), Text("Outputname", "", "stem of the output files"),
        YesNo("Hpd", "Yes", "HPD intervals"),
        Float("Minprob", 0.05, "minimum probability of models", *L.MINPROB, supported=()),
    ]


def _sumt() -> list[Param]:
    return [
        YesNo("Relburnin", "Yes", "burn-in as a fraction"), Int("Burnin", 0, "burn-in samples", 0),
        Float("Burninfrac", 0.25, "burn-in fraction", *L.BURNINFRAC), Int("Nruns", 2, "number of runs", 1),
        Int("Ntrees", 1, "tree files to summarize (NAME.tree<k>...)", 1), Text("Filename", "", "file stem of the .t files"),
        Float("Minpartfreq", 0.10, "minimum split frequency", 0.0, 1.0),
        Choice("Contype", "Halfcompat", "consensus type", ("Halfcompat", "Allcompat")),
        Choice("Conformat", "Figtree", "consensus format", ("Figtree", "Simple")),
        Text("Outputname", "", "stem of the output files"), YesNo("Calctreeprobs", "Yes", "tree probabilities"),
        YesNo("Showtreeprobs", "No", "draw every sampled tree with its probability"),
        YesNo("Hpd", "Yes", "HPD intervals"),
        YesNo("Savebrparams", "No", "save sampled branch lengths to <outputname>.brparams"),
        Float("Minbrparamfreq", 0.5, "minimum partition frequency for .brparams columns", 0.0, 1.0),
    ]


# what link/unlink can split (the trees they give: mbgpu.tree_groups)
_LINKED = ("Tratio", "Revmat", "Statefreq", "Shape", "Pinvar", "Ratemultiplier", "Topology", "Brlens")
_LINKABLE = ("Tratio", "Revmat", "Omega", "Statefreq", "Shape", "Pinvar", "Correlation", "Ratemultiplier",
             "Switchrates", "Topology", "Brlens", "Speciationrate", "Extinctionrate", "Fossilizationrate",
             "Popsize", "Growthrate", "Aamodel", "Cpprate", "Cppmultdev", "Cppevents", "TK02var", "Igrvar",
             "Clockrate")


def _report() -> list[Param]:
    no = ()  # possel and siteomega need codon models; MrBayes 3.2.7a crashes (SIGSEGV) at tree=topology
    return [Divisions("Applyto", "all", "divisions"),
            Choice("Tratio", "Ratio", "kappa as k (ratio) or as ti tv = k/(1+k), 1/(1+k) (dirichlet)",
                   ("Ratio", "Dirichlet")),
            Choice("Revmat", "Dirichlet", "rates summing to 1 (dirichlet) or over r(G<->T) (ratio)",
                   ("Ratio", "Dirichlet")),
            Choice("Ratemult", "Scaled", "multipliers as sampled (scaled), over the first (ratio) or over "
                   "their sum (dirichlet)", ("Scaled", "Ratio", "Dirichlet")),
            Choice("Tree", "Brlens", "", ("Brlens", "Topology"), supported=no),
            YesNo("Ancstates", "No", "ancestral states of the constrained nodes (.p columns p(X){site@name})"),
            YesNo("Siterates", "No", "posterior mean rate of every site (.p columns r(site))"),
            YesNo("Possel", "No", supported=no), YesNo("Siteomega", "No", supported=no)]


def _link_params() -> list[Param]:
    return [Divisions(n, None, "divisions", supported=None if n in _LINKED else ()) for n in _LINKABLE]


@dataclass
class CommandSpec:
    """One command: name, summary, parameters, and whether mbgpu implements it yet."""

    name: str
    summary: str
    params: list[Param] = field(default_factory=list)
    syntax: str = ""
    implemented: bool = True

    def param_names(self) -> list[str]:
        return [p.name for p in self.params]


def table_defaults(table: dict[str, CommandSpec]) -> dict[str, dict[str, Any]]:
    """Every command's parameter defaults (lower-case command -> canonical name -> default): what a fresh
    mbgpu.settings.Settings starts from."""
    return {name: {p.name: p.default for p in spec.params} for name, spec in table.items()}


def build_table() -> dict[str, CommandSpec]:
    """A fresh table (no shared mutable state): lower-case name -> spec."""
    specs = [
        CommandSpec("Set", "sets general options", _set(), "set param=value ...;"),
        CommandSpec("Execute", "executes a NEXUS file", [], "execute FILENAME;"),
        CommandSpec("Lset", "sets the likelihood model", _lset(), "lset [applyto=(...)] param=value ...;"),
        CommandSpec("Prset", "sets the priors", _prset(), "prset [applyto=(...)] param=value ...;"),
        CommandSpec("Mcmc", "sets MCMC options and starts the analysis", _mcmc(), "mcmc param=value ...;"),
        CommandSpec("Mcmcp", "sets MCMC options without starting", _mcmc(), "mcmcp param=value ...;"),
        CommandSpec("Sump", "summarises the parameter (.p) files", _sump(), "sump param=value ...;"),
        CommandSpec("Sumt", "summarises the tree (.t) files", _sumt(), "sumt param=value ...;"),
        CommandSpec("Ss", "stepping-stone sampling: the marginal likelihood", _ss(), "ss param=value ...;"),
        CommandSpec("Ssp", "sets stepping-stone options without starting", _ss(), "ssp param=value ...;"),
        CommandSpec("Sumss", "summarises stepping-stone runs (.p files)", _sumss(), "sumss param=value ...;"),
        CommandSpec("Charset", "defines a character set", [], "charset NAME = 1-10 12 20-.\\3 ...;"),
        CommandSpec("Partition", "defines a character partition", [], "partition NAME = N: set1, set2, ...;"),
        CommandSpec("Unlink", "unlinks parameters across divisions",
                    _link_params(), "unlink shape=(all) ...;"),
        CommandSpec("Link", "links parameters across divisions",
                    _link_params(), "link shape=(all) ...;"),
        CommandSpec("Outgroup", "sets the outgroup taxon", [], "outgroup NAME|NUMBER;"),
        CommandSpec("Startvals", "sets starting values of parameters",
                    [Text("Tau", None, "start topology (a tree name)"), Text("V", None, "start branch lengths"),
                     Numbers("Ratemultiplier", None, "start partition rate multipliers")],
                    "startvals tau=TREE V=TREE ratemultiplier=(...);"),
        CommandSpec("Log", "logs screen output to a file",
                    [Choice("Start", None, "", ("Yes",)), Choice("Stop", None, "", ("Yes",)),
                     Text("Filename", "log.out", "log file"), Choice("Append", None, "", ("Yes",)),
                     Choice("Replace", None, "", ("Yes",))], "log start filename=F [append|replace]; log stop;"),
        CommandSpec("Showmodel", "shows the current model settings", [], "showmodel;"),
        CommandSpec("Help", "describes a command, or lists them all", [], "help [COMMAND];"),
        CommandSpec("Quit", "quits the program", [], "quit;"),
        CommandSpec("Report", "sets how parameters are reported", _report(), "report param=value ...;"),
        CommandSpec("Exclude", "excludes characters from the analysis", [], "exclude 1-10 NAME ...|all;"),
        CommandSpec("Ctype", "sets character types: unordered or ordered (dollo and irreversible are not supported "
                    "yet)", [], "ctype unordered|ordered: 1-10 NAME ...;"),
        CommandSpec("Charstat", "shows the status of the characters", [], "charstat;"),
        CommandSpec("Propset", "sets a move's relative proposal probability ($prob) or its start tuning "
                    "($lambda, $alpha, $delta, $p_ext, ...), as named in the move list printed at mcmc start; "
                    "(run,chain) after a tuning parameter sets it for one chain; as in MrBayes, a new nruns, "
                    "lset, prset and other model changes discard the settings and a new nchains those of "
                    "the chains that go (docs/user-guide.md)", [],
                    "propset NAME$PARAM[(run,chain)]=VALUE ...;"),
        CommandSpec("Showmatrix", "shows the data matrix (every taxon and character, as stored)", [], "showmatrix;"),
        CommandSpec("Taxastat", "shows the status of the taxa (included, constraints, outgroup)", [], "taxastat;"),
        CommandSpec("Usertree", "deprecated in MrBayes: define the tree in a trees block and use startvals", [],
                    "usertree = TREE;"),
        CommandSpec("Include", "includes excluded characters again", [], "include 1-10 NAME ...|all;"),
        CommandSpec("Taxset", "defines a set of taxa", [], "taxset NAME = taxa (names, numbers, 3-7, taxsets);"),
        CommandSpec("Delete", "deletes taxa from the analysis", [], "delete taxa (names, numbers, 3-7, taxsets, all);"),
        CommandSpec("Restore", "restores deleted taxa to the analysis", [],
                    "restore taxa (names, numbers, 3-7, taxsets, all);"),
        CommandSpec("Calibrate", "sets the age prior of a hard constraint's node or of a tip (used with prset "
                    "nodeagepr=calibrated; dist: fixed, uniform, offsetexponential, truncatednormal, lognormal, "
                    "offsetlognormal, gamma, offsetgamma, or unconstrained to remove it)", [],
                    "calibrate NAME=dist(...) ...;"),
        CommandSpec("Constraint", "defines a topology constraint (used by prset topologypr=constraints(...))", [],
                    "constraint NAME [hard|negative|partial] = taxa [: taxa];"),
    ]
    for name, summary in _STORED:
        specs.append(CommandSpec(name, summary + " (stored; not used by the analysis yet)", [], ""))
    for name, summary in _NOT_YET:
        specs.append(CommandSpec(name, summary, [], "", implemented=False))
    return {s.name.lower(): s for s in specs}


_STORED = [
    ("Pairs", "doublet pairs"), ("Speciespartition", "species partition"),
]

_NOT_YET = [
    ("About", "about the program"), ("Acknowledgments", "acknowledgments"),
    ("Citations", "citations"), ("Comparetree", "compares trees"),
    ("Databreaks", "data breaks"),
("Deroot", "unroots user tree"), ("Disclaimer", "disclaimer"),
    ("Manual", "writes a manual"),
    ("Plot", "plots parameters"),
("Root", "roots user tree"), ("Showbeagle", "backend resources"),
    ("Showmcmctrees", "shows MCMC trees"), ("Showmoves", "shows moves"),
    ("Showparams", "shows parameters"), ("Showusertrees", "shows user trees"),
    ("Version", "program version"),
]
