"""The offline scheduler, as kube-scheduler is built: one test module per plugin of
``kaffinity/simulate/plugins`` (``test_<plugin>.py``), each running that plugin's upstream test
table (``tests/data/upstream/<plugin>.yaml``), and the framework's own tests (``test_framework.py``)."""
