package io.memwire.tpcds.report;

import io.memwire.tpcds.data.TpcdsDataGenerator;
import io.memwire.tpcds.run.QueryStats;
import io.memwire.tpcds.run.RunResult;
import io.memwire.tpcds.run.ShuffleConfig;
import java.awt.Color;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.ToDoubleFunction;
import org.jfree.chart.ChartFactory;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.data.category.DefaultCategoryDataset;

/** Bar charts of a run, drawn with JFreeChart: per query, one bar per configuration. */
final class Charts {
  private static final int WIDTH = 1000;
  private static final int HEIGHT = 500;
  private final Path dir;

  Charts(Path dir) {
    this.dir = dir;
  }

  /** Writes the charts and returns their paths relative to the run directory. */
  List<String> write(RunResult result) throws IOException {
    List<String> written = new ArrayList<>();
    if (result.stats().isEmpty()) {
      return written;
    }
    System.setProperty("java.awt.headless", "true");
    Files.createDirectories(dir);
    written.add(
        bar(
            result,
            "query-times.png",
            "Median wall time per query",
            "seconds",
            s -> s.medianMs() / 1000));
    written.add(
        bar(
            result,
            "fetch-wait.png",
            "Shuffle fetch wait per query (median, all tasks)",
            "seconds",
            s -> s.fetchWaitMs() / 1000));
    written.add(
        bar(
            result,
            "shuffle-read.png",
            "Shuffle bytes read per query (median, local + remote)",
            "MB",
            s -> (s.localBytesRead() + s.remoteBytesRead()) / 1e6));
    return written;
  }

  private String bar(
      RunResult result, String file, String title, String axis, ToDoubleFunction<QueryStats> value)
      throws IOException {
    DefaultCategoryDataset data = new DefaultCategoryDataset();
    for (String q : result.queries()) {
      for (ShuffleConfig c : result.configs()) {
        QueryStats s = result.stats(q, c.name());
        if (s != null) {
          data.addValue(value.applyAsDouble(s), c.name(), q);
        }
      }
    }
    String subtitle =
        String.format(
            "TPC-DS SF %s, Spark %s",
            TpcdsDataGenerator.scaleText(result.dataSet().scale()),
            result.environment().get("sparkVersion"));
    JFreeChart chart =
        ChartFactory.createBarChart(
            title + " - " + subtitle,
            "query",
            axis,
            data,
            PlotOrientation.VERTICAL,
            true,
            false,
            false);
    chart.getCategoryPlot().setBackgroundPaint(Color.WHITE);
    chart.getCategoryPlot().setRangeGridlinePaint(Color.GRAY);
    Path path = dir.resolve(file);
    ChartUtils.saveChartAsPNG(path.toFile(), chart, WIDTH, HEIGHT);
    return dir.getFileName().resolve(file).toString();
  }
}
