"""Help generated from the command table: the command list, one command's parameters, the
`showmodel` summary, and the Markdown command reference (docs/commands.md)."""
from __future__ import annotations

from mbgpu.commands.params import Param


def command_list(table) -> str:
    lines = ["   Commands (unique prefixes are accepted; 'help NAME' describes one):", ""]
    for spec in table.values():
        flag = "" if spec.implemented else "  (not supported yet)"
        lines.append("   %-18s %s%s" % (spec.name, spec.summary, flag))
    return "\n".join(lines)


def _current(spec, settings) -> dict:
    name = spec.name.lower()
    if name in ("mcmc", "mcmcp"):
        return settings.mcmc
    if name in ("ss", "ssp"):
        return {**settings.mcmc, **settings.ss}
    if name in ("set", "sump", "sumt", "sumss", "report"):
        return {"set": settings.options, "sump": settings.sump, "sumt": settings.sumt, "sumss": settings.sumss,
                "report": settings.report}[name]
    if name in ("lset", "prset") and settings.divisions:
        return getattr(settings.divisions[0], name)
    return {}


def _show(p: Param, value) -> str:
    return p.show(value) if value is not None else ""


def _wrap_options(text: str, width: int) -> list[str]:
    """Split `A/B/C...` into lines of at most `width` characters, breaking after a '/'."""
    lines, current = [], ""
    for part in text.split("/"):
        piece = part if not current else "/" + part
        if current and len(current) + len(piece) > width:
            lines.append(current + "/")
            current = part
        else:
            current += piece
    return lines + [current]


def command_help(spec, settings=None) -> str:
    lines = ["   %s: %s" % (spec.name, spec.summary)]
    if spec.syntax:
        lines.append("   Usage: %s" % spec.syntax)
    if not spec.implemented:
        lines.append("   (recognised, not supported yet in mbgpu)")
    if spec.params:
        current = _current(spec, settings) if settings is not None else {}
        lines += ["", "   %-18s %-40s %s" % ("Parameter", "Options", "Current Setting"), "   " + "-" * 74]
        for p in spec.params:
            val = current.get(p.name, p.default)
            opts = _wrap_options(p.options(), 40)
            lines.append("   %-18s %-40s %s" % (p.name, opts[0], _show(p, val)))
            lines += ["   %-18s %s" % ("", more) for more in opts[1:]]
            if p.support_note():
                lines.append("   %-18s mbgpu: %s" % ("", p.support_note()))
        lines.append("   " + "-" * 74)
    return "\n".join(lines)


def model_summary(settings) -> str:
    """`showmodel`: MrBayes' model summary, the same text `mcmc` prints before it starts."""
    from mbgpu.output.modelsummary import model_summary_lines

    return "\n".join(model_summary_lines(settings))


def markdown_reference(table) -> str:
    """The command reference page, generated so it never disagrees with the parser."""
    out = ["# Command reference", "",
           "Generated from the command table (`python -m mbgpu.commands.reference > docs/commands.md`).",
           "Command names, parameter names and enumerated values accept any unique prefix, case-insensitively;",
           "an exact match always wins.", ""]
    for spec in table.values():
        out.append("## %s%s" % (spec.name.lower(), "" if spec.implemented else " (not supported yet)"))
        out += ["", spec.summary + ".", ""]
        if spec.syntax:
            out += ["`%s`" % spec.syntax, ""]
        if spec.params:
            out += ["| parameter | options | default | meaning | mbgpu runs |", "|---|---|---|---|---|"]
            for p in spec.params:
                default = "" if p.default is None else p.show(p.default)
                opts = p.options().replace("|", "/")
                runs = p.support_note() or "every value"
                out.append("| %s | %s | %s | %s | %s |" % (p.name, opts, default, p.help, runs))
            out.append("")
    return "\n".join(out) + "\n"
