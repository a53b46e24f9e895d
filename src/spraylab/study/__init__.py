"""Studies as data: sweeps with labelled variants, claims judged against the store, and a page
rendered from a template whose every number comes from the store (``spraylab study``)."""

from spraylab.study.claims import Verdict, evaluate, evaluate_all
from spraylab.study.data import StudyData
from spraylab.study.definition import Claim, Study

__all__ = ["Claim", "Study", "StudyData", "Verdict", "evaluate", "evaluate_all"]
