"""The course's authoring tools, for the course's authors and instructors (learners import
`classroom/` and `tutorial/`): building the lessons from their walkthroughs (`lessons`,
`notebook_form`, `figures`, `builder`, `shown_code`), their editions for nbgrader
(`editions`), grading a class (`grading`, `gradebook`) and the conceptual diagrams
(`diagrams`), all behind one command line, `ipu-course` (`cli`). Each tool is given the course's
checkout (`checkout.Checkout`); none finds it from where the package is installed.
"""
