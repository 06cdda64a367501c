"""One module per kube-scheduler plugin kaffinity models, named as upstream names its folder
(``pkg/scheduler/framework/plugins/<name>``): each holds that plugin's reason strings, its
PreFilter state, its Filter and its Score as kaffinity models them. The framework
(:mod:`kaffinity.simulate.framework`) runs them in the default profile's order.

Each is paired with its upstream test table, restated as manifests in
``tests/data/upstream/<name>.yaml`` and run by ``tests/simulate/test_<name>.py``.
"""
