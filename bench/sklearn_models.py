"""scikit-learn models through the ONNX importer, each checked against onnxruntime: the
estimators and pipelines a user exports with scikit-learn's ONNX converter (skl2onnx),
fitted on small generated data, exported with their probabilities as a tensor (the
converter's ``zipmap: False``; with maps, ZipMap is refused with that advice), imported,
run by the reference interpreter and compared output by output with onnxruntime on the
same file.

    python bench/sklearn_models.py                  # every model, a table
    python bench/sklearn_models.py --markdown
    python bench/sklearn_models.py -k forest        # models whose name holds "forest"

A model "matches" when every output agrees (labels exactly, scores within rtol 1e-4 and
atol 1e-3); otherwise the row says "mismatch", gives the first line of the import's refusal
("refused"), or of the converter's own failure ("no export", counted apart: scikit-learn's
converter, not rlxir, stopped). Needs scikit-learn, skl2onnx, onnx and onnxruntime (not
rlxir's dependencies: ``pip install scikit-learn skl2onnx``).
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections import Counter

import numpy as np


def models() -> list[tuple[str, object, str]]:
    """(name, estimator, which data: classes2 / 3 / 4, regression, gaps, counts, categories)."""
    from sklearn.cluster import KMeans
    from sklearn.decomposition import PCA, TruncatedSVD
    from sklearn.ensemble import (AdaBoostRegressor, BaggingRegressor, ExtraTreesRegressor, GradientBoostingClassifier,
                                  GradientBoostingRegressor, HistGradientBoostingRegressor, RandomForestClassifier,
                                  RandomForestRegressor)
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import (BayesianRidge, ElasticNet, Lasso, LinearRegression, LogisticRegression,
                                      PoissonRegressor, Ridge, SGDClassifier)
    from sklearn.naive_bayes import GaussianNB
    from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
    from sklearn.neural_network import MLPClassifier, MLPRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import (Binarizer, KBinsDiscretizer, MaxAbsScaler, MinMaxScaler, Normalizer,
                                       OneHotEncoder, PolynomialFeatures, RobustScaler, StandardScaler)
    from sklearn.svm import SVC, SVR, LinearSVC, LinearSVR
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    return [
        ("decision tree classifier", DecisionTreeClassifier(max_depth=5, random_state=0), "classes3"),
        ("random forest classifier, 3 classes", RandomForestClassifier(20, max_depth=6, random_state=0), "classes3"),
        ("random forest classifier, 2 classes", RandomForestClassifier(10, max_depth=5, random_state=0), "classes2"),
        ("gradient boosting classifier, 3 classes", GradientBoostingClassifier(n_estimators=15, random_state=0),
         "classes3"),
        ("gradient boosting classifier, 2 classes", GradientBoostingClassifier(n_estimators=15, random_state=0),
         "classes2"),
        ("decision tree regressor", DecisionTreeRegressor(max_depth=6, random_state=0), "regression"),
        ("random forest regressor", RandomForestRegressor(15, max_depth=6, random_state=0), "regression"),
        ("extra trees regressor", ExtraTreesRegressor(10, max_depth=5, random_state=0), "regression"),
        ("gradient boosting regressor", GradientBoostingRegressor(n_estimators=20, random_state=0), "regression"),
        ("histogram gradient boosting regressor", HistGradientBoostingRegressor(max_iter=20), "gaps"),
        ("AdaBoost regressor", AdaBoostRegressor(n_estimators=5, random_state=0), "regression"),
        ("bagging regressor", BaggingRegressor(n_estimators=4, random_state=0), "regression"),
        ("logistic regression, 3 classes", LogisticRegression(max_iter=500), "classes3"),
        ("logistic regression, 2 classes", LogisticRegression(max_iter=500), "classes2"),
        ("linear SVC", LinearSVC(), "classes3"),
        ("SGD classifier", SGDClassifier(random_state=0), "classes2"),
        ("SVC (RBF), 3 classes", SVC(), "classes3"),
        ("SVC (RBF), 2 classes", SVC(), "classes2"),
        ("SVC (linear), 4 classes", SVC(kernel="linear"), "classes4"),
        ("SVC (polynomial), 3 classes", SVC(kernel="poly", degree=2), "classes3"),
        ("SVC (sigmoid), 2 classes", SVC(kernel="sigmoid"), "classes2"),
        ("SVC with probabilities, 3 classes", SVC(probability=True, random_state=0), "classes3"),
        ("SVC with probabilities, 2 classes", SVC(probability=True, random_state=0), "classes2"),
        ("SVC with probabilities, 4 classes", SVC(kernel="linear", probability=True, random_state=0), "classes4"),
        ("Gaussian naive Bayes", GaussianNB(), "classes3"),
        ("k-nearest-neighbour classifier", KNeighborsClassifier(5), "classes3"),
        ("k-nearest-neighbour regressor", KNeighborsRegressor(3), "regression"),
        ("MLP classifier", MLPClassifier(hidden_layer_sizes=(16,), max_iter=200, random_state=0), "classes3"),
        ("MLP regressor", MLPRegressor(hidden_layer_sizes=(16,), max_iter=200, random_state=0), "regression"),
        ("linear regression", LinearRegression(), "regression"),
        ("ridge", Ridge(), "regression"),
        ("lasso", Lasso(), "regression"),
        ("Poisson regressor", PoissonRegressor(), "counts"),
        ("SVR (RBF)", SVR(), "regression"),
        ("SVR (polynomial)", SVR(kernel="poly", degree=2), "regression"),
        ("linear SVR", LinearSVR(), "regression"),
        ("k-means", KMeans(3, n_init=2, random_state=0), "regression"),
        ("PCA", PCA(3), "regression"),
        ("truncated SVD", TruncatedSVD(3), "regression"),
        ("standard scaler + logistic regression", make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)),
         "classes3"),
        ("min-max scaler + random forest", make_pipeline(MinMaxScaler(), RandomForestRegressor(
            5, max_depth=4, random_state=0)), "regression"),
        ("normalizer + ridge", make_pipeline(Normalizer(), Ridge()), "regression"),
        ("imputer + random forest", make_pipeline(SimpleImputer(), RandomForestRegressor(
            5, max_depth=4, random_state=0)), "gaps"),
        ("robust scaler + elastic net", make_pipeline(RobustScaler(), ElasticNet()), "regression"),
        ("max-abs scaler + Bayesian ridge", make_pipeline(MaxAbsScaler(), BayesianRidge()), "regression"),
        ("polynomial features + ridge", make_pipeline(PolynomialFeatures(2), Ridge()), "regression"),
        ("binarizer + logistic regression", make_pipeline(Binarizer(), LogisticRegression(max_iter=300)), "classes3"),
        ("k-bins one-hot + ridge", make_pipeline(KBinsDiscretizer(n_bins=4, encode="onehot-dense"), Ridge()),
         "regression"),
        ("one-hot encoder of integers + ridge", make_pipeline(OneHotEncoder(sparse_output=False), Ridge()),
         "categories"),
    ]


def datasets() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    from sklearn.datasets import make_classification, make_regression

    x3, y3 = make_classification(200, 6, n_informative=4, n_classes=3, random_state=0)
    x2, y2 = make_classification(200, 6, n_informative=4, n_classes=2, random_state=1)
    x4, y4 = make_classification(200, 6, n_informative=4, n_classes=4, random_state=3)
    xr, yr = make_regression(200, 6, random_state=2)
    gaps = xr.astype(np.float32)
    gaps[::7, 2] = np.nan
    categories = np.random.default_rng(0).integers(0, 4, (200, 3)).astype(np.int64)
    return {"classes3": (x3.astype(np.float32), y3), "classes2": (x2.astype(np.float32), y2),
            "classes4": (x4.astype(np.float32), y4),
            "regression": (xr.astype(np.float32), yr), "gaps": (gaps, yr),
            "counts": (xr.astype(np.float32), np.abs(yr)), "categories": (categories, yr)}


def check(name: str, estimator, x: np.ndarray, y: np.ndarray) -> dict:
    import onnxruntime
    from skl2onnx import to_onnx
    from sklearn.base import is_classifier

    from rlxir.importers.onnx import import_onnx
    from rlxir.interpreter import interpret

    estimator.fit(x, y)
    row = {"model": name}
    try:
        options = {"zipmap": False} if is_classifier(estimator) else None
        try:
            model = to_onnx(estimator, x[:1], options=options)
        except (NameError, RuntimeError, ValueError):  # an estimator without the zipmap option
            model = to_onnx(estimator, x[:1])
    except Exception as error:  # the converter's own failure, reported as such
        return {**row, "status": "no export", "detail": str(error).splitlines()[0][:100]}
    row["ops"] = ", ".join(sorted({node.op_type for node in model.graph.node}))
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feed_name = session.get_inputs()[0].name
    rows = x[:40]
    wants = session.run(None, {feed_name: rows})
    started = time.perf_counter()
    try:
        imported = import_onnx(model)
    except Exception as error:  # a refusal: its first line is the report
        return {**row, "status": "refused", "detail": str(error).splitlines()[0][:140]}
    got = interpret(imported.graph, {imported.inputs[feed_name]: rows}, params=imported.params,
                    bindings={symbol: len(rows) for symbol in imported.graph.symbols})
    row["import_run_s"] = time.perf_counter() - started
    worst = 0.0
    for output, want in zip(session.get_outputs(), wants):
        have, want = got[imported.outputs[output.name]], np.asarray(want)
        if have.shape != want.shape and have.size == want.size:
            have = have.reshape(want.shape)
        if want.dtype.kind in "iub":
            same = have.shape == want.shape and np.array_equal(have, want)
        else:
            same = have.shape == want.shape and np.allclose(have, want, rtol=1e-4, atol=1e-3)
            if have.shape == want.shape:
                worst = max(worst, float(np.max(np.abs(have.astype(np.float64) - want))))
        if not same:
            return {**row, "status": "mismatch", "detail": f"output {output.name}"}
    return {**row, "status": "match", "detail": f"max abs difference {worst:.2g}"}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-k", default="", help="only models whose name contains this")
    parser.add_argument("--markdown", action="store_true", help="the table as Markdown")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    data = datasets()
    rows = [check(name, estimator, *data[which]) for name, estimator, which in models() if args.k in name]
    if args.markdown:
        print("| model | ONNX ops | status | detail |\n|---|---|---|---|")
        for row in rows:
            print(f"| {row['model']} | {row.get('ops', '')} | {row['status']} | {row['detail']} |")
    else:
        for row in rows:
            print(f"{row['model']:<42} {row['status']:<9} {row['detail']}")
    counts = Counter(row["status"] for row in rows)
    print(f"\n{len(rows)} models: " + ", ".join(f"{counts[status]} {status}" for status in
                                               ("match", "mismatch", "refused", "no export") if counts[status]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
