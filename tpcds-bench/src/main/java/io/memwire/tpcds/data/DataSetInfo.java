package io.memwire.tpcds.data;

import java.util.Map;

/**
 * A TPC-DS data set on disk: where it is, whether this run generated it or reused a cached copy,
 * the row count of each table, and how long generation (or checking the cache) took.
 */
public record DataSetInfo(
    double scale, String path, boolean generated, Map<String, Long> rowCounts, double seconds) {}
