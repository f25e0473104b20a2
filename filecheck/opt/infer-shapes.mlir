// RUN: nnvm-opt %s --pass infer-shapes | filecheck %s
// RUN: nnvm-opt %s -p infer-shapes,cse,dce | filecheck %s --check-prefix=CLEAN

// Unknown and partially known result types are refined from the operands, and the function
// signature follows what the body returns.
// CHECK-LABEL: func.func @refine(%x: tensor<1x3x8x8xf32>) -> tensor<1x4x4x4xf32>
// CHECK: nnvm.conv2d %x, %w {strides = [2, 2], padding = [1, 1, 1, 1]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
// CHECK: nnvm.relu %{{.*}} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
// CHECK: func.return %{{.*}} : tensor<1x4x4x4xf32>
// CLEAN-COUNT-1: nnvm.relu
// CLEAN-NOT: nnvm.relu
func.func @refine(%x: tensor<1x3x8x8xf32>) -> tensor<*xf32> {
  %w = nnvm.param "w" : tensor<4x3x3x3xf32>
  %c = nnvm.conv2d %x, %w {strides = [2, 2], padding = [1, 1, 1, 1]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<?x4x?x?xf32>
  %r = nnvm.relu %c : (tensor<?x4x?x?xf32>) -> tensor<*xf32>
  %dead = nnvm.relu %c : (tensor<?x4x?x?xf32>) -> tensor<*xf32>
  func.return %r : tensor<*xf32>
}

// Broadcasting and dtype inference: comparisons give i1.
// CHECK-LABEL: func.func @broadcast
// CHECK: nnvm.add %a, %b : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
// CHECK: nnvm.less %{{.*}}, %b : (tensor<2x3x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xi1>
func.func @broadcast(%a: tensor<2x1x4xf32>, %b: tensor<3x1xf32>) -> tensor<*xi1> {
  %s = nnvm.add %a, %b : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<*xf32>
  %l = nnvm.less %s, %b : (tensor<*xf32>, tensor<3x1xf32>) -> tensor<*xi1>
  func.return %l : tensor<*xi1>
}

// RUN: nnvm-opt %s --pass infer-shapes --mlir-pass-statistics -o /dev/null 2>&1 | filecheck %s --check-prefix=STATS
// STATS: Pass statistics report
// STATS: 'infer-shapes'
// STATS-NEXT: (S) 5 refined-values - values given a precise type
