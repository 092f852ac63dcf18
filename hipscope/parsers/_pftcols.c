/*
 * hipscope.parsers._pftscan, part 3: ann_ints, the integer annotation columns that
 * hipscope/parsers/pftrace/tables.py reads from the annotation dicts of millions of
 * slices (dict lookups without a Python loop).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* ann_ints(dicts, keys, defaults) -> (columns, exact): columns[j][i] = dicts[i].get(
   keys[j], defaults[j]); exact[j] is False where a value is neither an exact int nor
   None nor the default (Python converts that column's values with _as_int) */
PyObject *pft_ann_ints(PyObject *self, PyObject *args)
{
    PyObject *dicts, *keys, *defaults;
    if (!PyArg_ParseTuple(args, "O!O!O!", &PyList_Type, &dicts, &PyTuple_Type, &keys,
                          &PyTuple_Type, &defaults))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(dicts), m = PyTuple_GET_SIZE(keys);
    if (PyTuple_GET_SIZE(defaults) != m) {
        PyErr_SetString(PyExc_ValueError, "keys and defaults differ in length");
        return NULL;
    }
    PyObject *cols = PyTuple_New(m), *exact = PyTuple_New(m);
    if (!cols || !exact) goto fail;
    for (Py_ssize_t j = 0; j < m; j++) {
        PyObject *col = PyList_New(n), *key = PyTuple_GET_ITEM(keys, j);
        PyObject *dflt = PyTuple_GET_ITEM(defaults, j);
        int ok = 1;
        if (!col) goto fail;
        PyTuple_SET_ITEM(cols, j, col);
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *d = PyList_GET_ITEM(dicts, i);
            if (!PyDict_Check(d)) { PyErr_SetString(PyExc_TypeError, "not a dict"); goto fail; }
            PyObject *v = PyDict_GetItemWithError(d, key);
            if (!v) {
                if (PyErr_Occurred()) goto fail;
                v = dflt;
            } else if (v != Py_None && !PyLong_CheckExact(v)) ok = 0;
            PyList_SET_ITEM(col, i, Py_NewRef(v));
        }
        PyTuple_SET_ITEM(exact, j, PyBool_FromLong(ok));
    }
    PyObject *out = PyTuple_Pack(2, cols, exact);
    Py_DECREF(cols);
    Py_DECREF(exact);
    return out;
fail:
    Py_XDECREF(cols);
    Py_XDECREF(exact);
    return NULL;
}
