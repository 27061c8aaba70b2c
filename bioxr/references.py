"""The works a report cites, written out for a reader who has none of bioxr's files.

Reports name their methods by author and year in the text (:func:`cite`)
and list the works they used at the end (:func:`references`), so a
customer can look them up; they never point at files of this repository.
Keys are short names; :data:`WORKS` holds each work's citation.

Examples
--------
>>> from bioxr.references import cite, references
>>> cite("micheals-boult")
'Micheals and Boult (2001)'
>>> print(references(["iso-19795-1"]))
1. ISO/IEC 19795-1:2021, *Information technology — Biometric performance testing and reporting — Part 1: Principles and framework*, Annex F (algorithms for the ROC, DET and CMC). Geneva: ISO/IEC, 2021.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Work", "WORKS", "cite", "references"]


@dataclass(frozen=True)
class Work:
    """One cited work: how the text names it, its full citation (Markdown), and words that mark it in a text."""

    short: str
    citation: str
    mentions: tuple = ()


#: Every work a report may cite, by key.
WORKS: dict[str, Work] = {
    "micheals-boult": Work(
        "Micheals and Boult (2001)",
        "R. J. Micheals and T. E. Boult, *Improving Variance Estimation in Biometric Systems*, National Institute of "
        "Standards and Technology and University of Colorado at Colorado Springs, 2001.", ("Micheals and Boult",)),
    "iso-19795-1": Work(
        "ISO/IEC 19795-1:2021, Annex F",
        "ISO/IEC 19795-1:2021, *Information technology — Biometric performance testing and reporting — Part 1: "
        "Principles and framework*, Annex F (algorithms for the ROC, DET and CMC). Geneva: ISO/IEC, 2021.", ("ISO/IEC 19795-1", "Annex F")),
    "schuckers-2010": Work(
        "Schuckers (2010)",
        "M. E. Schuckers, *Computational Methods in Biometric Authentication: Statistical Methods for Performance "
        "Evaluation*. London: Springer, 2010.", ("Schuckers 2010", "Schuckers (2010)")),
    "schuckers-2022": Work(
        "Schuckers et al. (2022)",
        "M. Schuckers, S. Purnapatra, K. Fatima, D. Hou and S. Schuckers, *Statistical Methods for Assessing "
        "Differences in False Non-Match Rates Across Demographic Groups*, arXiv:2208.10948, 2022.", ("Schuckers et al.",)),
    "all-against-all": Work(
        "the all-against-all protocol of the Biometric Systems notes",
        "*Complete All Against All* (in *Biometric Systems*, course notes, Domiziano's CS notes, "
        "domiziano-cs-notes.netlify.app), undated.", ("all-against-all",)),
    "schestowitz": Work(
        "Schestowitz et al. (2006)",
        "R. S. Schestowitz, C. J. Twining, T. F. Cootes, V. S. Petrovic, C. J. Taylor and W. R. Crum, model "
        "evaluation by *Specificity and Generalisation* (non-rigid registration assessed through the appearance "
        "model it builds), University of Manchester, 2006.", ("Schestowitz",)),
    "brummer": Work(
        "Brümmer and de Villiers (2011)",
        "N. Brümmer and E. de Villiers, *The BOSARIS Toolkit: Theory, Algorithms and Code for Surviving the New "
        "DCF*, NIST SRE'11 Analysis Workshop, 2011.", ("BOSARIS", "Brümmer")),
    "obuchowski-1998": Work(
        "Obuchowski (1998)",
        "N. A. Obuchowski, On the comparison of correlated proportions for clustered data, *Statistics in "
        "Medicine* 17(13):1495-1507, 1998.", ("Obuchowski",)),
    "doddington": Work(
        "Doddington's rule of 30",
        "G. R. Doddington, M. A. Przybocki, A. F. Martin and D. A. Reynolds, The NIST speaker recognition "
        "evaluation: overview, methodology, systems, results, perspective, *Speech Communication* 31(2-3):225-254, "
        "2000.", ("Doddington",)),
}


def _work(key: str) -> Work:
    try:
        return WORKS[key]
    except KeyError:
        raise KeyError(f"no cited work {key!r}; known: {', '.join(WORKS)}") from None


def cite(key: str) -> str:
    """How the text names a work, e.g. ``'Schuckers (2010)'``.

    Examples
    --------
    >>> from bioxr.references import cite
    >>> cite("schuckers-2010")
    'Schuckers (2010)'
    """
    return _work(key).short


def references(keys) -> str:
    """The works ``keys`` name, as a numbered Markdown list in the order given (repeats dropped).

    Examples
    --------
    >>> from bioxr.references import references
    >>> references(["schuckers-2010", "schuckers-2010"]).count("Schuckers")
    1
    """
    seen = list(dict.fromkeys(keys))
    return "\n".join(f"{k}. {_work(key).citation}" for k, key in enumerate(seen, start=1))
