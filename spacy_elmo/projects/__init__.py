"""The steps of the spaCy projects under projects/: data fetching, conversion, seeds, evaluation and the results'
tables and plots, each a module run as `python -m spacy_elmo.projects.STEP ARGS` from a project's project.yml.
They are installed with the package, so a project folder copied (or `spacy project clone`d) alone runs wherever
spacy-elmo is installed; what some of them need besides is the `projects` extra (floret, matplotlib)."""
