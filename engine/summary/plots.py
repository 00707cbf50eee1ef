"""MrBayes' rough text plots of LnL against generation (sump's single and overlay plots)."""
from __future__ import annotations

import math

import numpy as np

_W, _H = 60, 15


def plot_header(nruns: int) -> list[str]:
    """The explanatory paragraph sump prints before its plots."""
    if nruns > 1:
        body = ["Below are rough plots of the generation (x-axis) versus the log   ",
                "probability of observing the data (y-axis). You can use these     ",
                "graphs to determine what the burn in for your analysis should be. ",
                "When the log probability starts to plateau you may be at station- ",
                "arity. Sample trees and parameters after the log probability      ",
                "plateaus. Of course, this is not a guarantee that you are at sta- ",
                "tionarity. Also examine the convergence diagnostics provided by   ",
                "the 'sump' and 'sumt' commands for all the parameters in your     ",
                "model. Remember that the burn in is the number of samples to dis- ",
                "card. There are a total of ngen / samplefreq samples taken during ",
                "a MCMC analysis.                                                  "]
    else:
        body = ["Below is a rough plot of the generation (x-axis) versus the log   ",
                "probability of observing the data (y-axis). You can use this      ",
                "graph to determine what the burn in for your analysis should be.  ",
                "When the log probability starts to plateau you may be at station- ",
                "arity. Sample trees and parameters after the log probability      ",
                "plateaus. Of course, this is not a guarantee that you are at sta- ",
                "analysis should be. When the log probability starts to plateau    ",
                "tionarity. When possible, run multiple analyses starting from dif-",
                "ferent random trees; if the inferences you make for independent   ",
                "analyses are the same, this is reasonable evidence that the chains",
                "have converged. You can use MrBayes to run several independent    ",
                "analyses simultaneously. During such a run, MrBayes will monitor  ",
                "the convergence of topologies. After the run has been completed,  ",
                "the 'sumt' and 'sump' functions will provide additional conver-   ",
                "gence diagnostics for all the parameters in your model. Remember  ",
                "that the burn in is the number of samples to discard. There are   ",
                "a total of ngen / samplefreq samples taken during a MCMC analysis."]
    return [""] + ["   " + b for b in body]


def _bin(x: float, lo: float, hi: float) -> int:
    k = int(((x - lo) / (hi - lo)) * _W) if hi != lo else 0
    return min(max(k, 0), _W - 1)


def _axis(min_x: float, max_x: float, width: int, fmt: str, lo: float, hi: float) -> list[str]:
    ticks = "".join("+" if i % (_W // 10) == 0 and i else "-" for i in range(_W))
    return ["   +" + ticks + "+ " + fmt % lo, "   ^" + " " * _W + "^",
            "   %.0f" % min_x + " " * (_W - width) + "%.0f" % max_x, ""]


def overlay_plot(xs: list[np.ndarray], ys: list[np.ndarray]) -> list[str]:
    """PrintOverlayPlot: one symbol per run ('1'..'9', 'x'), '*' where runs share a cell."""
    n = len(xs)
    out = ["", "   Overlay plot for both runs:" if n == 2 else "   Overlay plot for all %d runs:" % n,
           "   (1 = Run number 1; 2 = Run number 2 etc.; x = Run number 10 or above; * = Several runs)" if n > 9
           else "   (1 = Run number 1; 2 = Run number 2 etc.; * = Several runs)" if n > 2
           else "   (1 = Run number 1; 2 = Run number 2; * = Both runs)"]
    min_x = min(1e9, min(float(v) for x in xs for v in x))
    max_x = max(-1e9, max(float(v) for x in xs for v in x))
    min_y, max_y = 1e9, -1e9
    for x, y in zip(xs, ys):  # MrBayes' running bin means (bins advance by one at each change)
        acc, j, k2 = 0.0, 0, 0
        for xv, yv in zip(x, y):
            if _bin(float(xv), min_x, max_x) == j:
                acc += float(yv)
                k2 += 1
            else:
                acc /= k2 if k2 else float("nan")
                min_y, max_y = min(min_y, acc), max(max_y, acc)
                k2, acc, j = 1, float(yv), j + 1
        if k2 > 0:
            acc /= k2
            min_y, max_y = min(min_y, acc), max(max_y, acc)
    grid = [[" "] * _W for _ in range(_H)]
    for r, (x, y) in enumerate(zip(xs, ys)):
        sums, cnt = np.zeros(_W), np.zeros(_W, dtype=int)
        for xv, yv in zip(x, y):
            k = _bin(float(xv), min_x, max_x)
            sums[k] += float(yv)
            cnt[k] += 1
        for i in range(_W):
            if cnt[i]:
                k = int((((sums[i] / cnt[i]) - min_y) / (max_y - min_y)) * _H) if max_y != min_y else 0
                k = min(max(k, 0), _H - 1)
                grid[k][i] = ("%d" % (r + 1) if r <= 8 else "x") if grid[k][i] == " " else "*"
    out += ["", "   +" + "-" * _W + "+ %.2f" % max_y]
    out += ["   |" + "".join(grid[i]) + "|" for i in range(_H - 1, -1, -1)]
    width = int(math.log10(min_x)) if int(min_x) > 0 else 1 if int(min_x) == 0 else int(math.log10(-min_x)) + 1
    return out + _axis(min_x, max_x, width, "%.2f", min_y, max_y)


def single_plot(x: np.ndarray, y: np.ndarray) -> list[str]:
    """PrintPlot: one run's bin means as '*'."""
    min_x, max_x = float(np.min(x)), float(np.max(x))
    sums, cnt = np.zeros(_W), np.zeros(_W, dtype=int)
    for xv, yv in zip(x, y):
        k = _bin(float(xv), min_x, max_x)
        sums[k] += float(yv)
        cnt[k] += 1
    mean = np.where(cnt > 0, sums / np.maximum(cnt, 1), 0.0)
    used = [mean[i] for i in range(_W) if sums[i] != 0]
    lo = hi = sums[0] / cnt[0] if cnt[0] else float("nan")
    lo, hi = min([lo] + used), max([hi] + used)
    diff = hi - lo
    out = ["", "   +" + "-" * _W + "+ %.3f" % hi]
    for j in range(_H - 1, -1, -1):
        row = "".join("*" if cnt[i] and ((lo + diff / _H * j < mean[i] <= lo + diff / _H * (j + 1))
                                          or (j == 0 and mean[i] <= lo)) else " " for i in range(_W))
        out.append("   |" + row + "|")
    width = 1 if min_x == 0 else int(math.log10(min_x)) + 1
    return out + _axis(min_x, max_x, width, "%.3f", lo, hi)
