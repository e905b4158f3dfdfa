"""The course built on physai: the lessons' shared helpers (:mod:`~physai.course.lesson`), their pages and site
(:mod:`~physai.course.course`, :mod:`~physai.course.report`, the templates and fonts in ``site/``), graded exercises
(:mod:`~physai.course.exercise`, the learner's code running in :mod:`~physai.course._exercise_child`) and notebooks
(:mod:`~physai.course.notebook`); an installed package carries the lessons themselves in ``_lessons/``.

It needs the ``course`` extra (``pip install "physai-kinematics[course]"``). The library never imports it: only the
command line's course commands and ``physai.check`` reach it.
"""

from physai._extras import require

require("course", "physai.course")
