"""Semantic change: which words changed meaning between two corpora or periods, read from two usage indexes
(`spacy_elmo.usages`), with the evidence a researcher reads.

- measures.py: APD, PRT, the energy distance and the cluster JSD over each word's usages;
- verdict.py: "changed", against control words drawn from the same corpora (the corpora's own drift as the null);
- controls.py: the control words, matched by frequency and, where the corpora are tagged, part of speech;
- senses.py: sense clusters, intervals, the permutation test, the evidence behind a score;
- sense_checks.py: what a sense passes before it is shown or marked (stability, names, documents, controls);
- sense_input.py, substitutes.py, sense_names.py: what the senses are clustered from and named by;
- gold.py, wug.py, wug_export.py: people's change, WUG-format datasets, the model's judgments as one;
- run.py: `spacy-elmo change` as a function, in the order of its work; outputs.py: the table, answer and cluster
  files; report.py: the page a person opens.
"""
