"""The `propset` command, and where MrBayes forgets its values (mbgpu.propset holds what they are)."""
from __future__ import annotations

from mbgpu import propset
from mbgpu.errors import CommandError


def current_moves(s) -> list:
    """The move list the current model gives a chain (MrBayes' names), before any propset; with clock trees
    MrBayes' clock list with its weight-0 moves, which propset may switch on (mbgpu.clock.move_table)."""
    from mbgpu.clock.model import clock_models
    from mbgpu.clock.move_table import clock_analysis_moves
    from mbgpu.parameters import free_parameters
    from mbgpu.sampler.move_table import build_moves
    from mbgpu.tree_groups import tree_groups

    if any(m is not None for m in clock_models(s)):
        return clock_analysis_moves(s, available=True)
    return build_moves(free_parameters(s), len(s.divisions), fixed_topology=s.fixed_topology() is not None,
                       trees=tree_groups(s), clocks=clock_models(s))


def do_propset(interp, spec, cmd) -> None:
    """`propset NAME$PARAM[(run,chain)]=VALUE ...`: checked against the current moves, then kept (silently,
    as mbgpu's other setting commands; MrBayes says "Successfully set proposal parameters")."""
    s = interp.settings
    if s.matrix is None:
        raise cmd.error("propset needs a data matrix: execute a file with a data block first", cmd.tokens[0],
                        CommandError)
    got = propset.checked(cmd, current_moves(s), int(s.mcmc["Nruns"]), int(s.mcmc["Nchains"]))
    s.propset = s.propset + got


def forget_after(s, command: str, names=()) -> None:
    """Drop the propset values where MrBayes does: after the commands that rebuild its moves (`command`,
    with `names` the options a `set` gave)."""
    if command in propset.RESET_BY or (command == "Set" and any(n in propset.RESET_BY_SET for n in names)):
        s.propset = []


def forget_on_resize(s, name: str, value) -> None:
    """A new number of runs (mcmc, mcmcp, ss, ssp) drops the propset values, a new number of chains those of
    the chains that go, as in MrBayes (mbgpu.propset.resized)."""
    s.propset = propset.resized(s.propset, name, s.mcmc.get(name), value)
